package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/acl"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/ui"
	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/raft"
)

func (s *Server) routes(mux *http.ServeMux) {
	// Each route names what its token needs (acl.go); with ACLs off every
	// request is allowed. Membership and Raft changes need a server's
	// identity (serveronly.go).
	a := s.allow
	mux.HandleFunc("GET /v1/jobs", s.read(a(bodyCap(acl.CapListJobs), s.jobList)))
	mux.HandleFunc("POST /v1/jobs", s.writeChecked(bodyCap(acl.CapSubmitJob), s.jobRegister(true), s.checkJobRequest))
	mux.HandleFunc("POST /v1/jobs/plan", s.writeChecked(bodyCap(acl.CapSubmitJob), s.jobPlan, s.checkJobRequest))
	mux.HandleFunc("GET /v1/job/{id}", s.read(a(nsCap(acl.CapReadJob), s.jobRead)))
	mux.HandleFunc("PUT /v1/job/{id}", s.writeChecked(bodyCap(acl.CapSubmitJob), s.jobRegister(false), s.checkJobRequest))
	mux.HandleFunc("DELETE /v1/job/{id}", s.write(a(nsCap(acl.CapStopJob), s.jobStop)))
	mux.HandleFunc("GET /v1/job/{id}/versions", s.read(a(nsCap(acl.CapReadJob), s.jobVersions)))
	mux.HandleFunc("POST /v1/job/{id}/revert", s.write(a(nsCap(acl.CapSubmitJob), s.jobRevert)))
	mux.HandleFunc("GET /v1/job/{id}/history", s.read(a(nsCap(acl.CapReadJob), s.jobHistory)))
	mux.HandleFunc("GET /v1/job/{id}/summary", s.read(a(nsCap(acl.CapReadJob), s.jobSummary)))
	mux.HandleFunc("GET /v1/job/{id}/samples", s.read(a(nsCap(acl.CapReadMetrics), s.jobSamples)))
	mux.HandleFunc("POST /v1/report", s.write(a(bodyCap(acl.CapReport), s.report)))
	mux.HandleFunc("GET /v1/nodes", s.read(a(operatorRead, s.nodeList)))
	mux.HandleFunc("GET /v1/node/{id}", s.read(a(operatorRead, s.nodeRead)))
	mux.HandleFunc("GET /v1/plan", s.read(a(operatorRead, s.planLatest)))
	mux.HandleFunc("GET /v1/events", s.read(a(operatorRead, s.eventList)))
	mux.HandleFunc("GET /v1/event/stream", s.guard(operatorRead, s.eventStream))
	mux.HandleFunc("GET /v1/operator/scheduler/configuration", s.read(a(operatorRead, s.schedulerConfigGet)))
	mux.HandleFunc("PUT /v1/operator/scheduler/configuration", s.write(a(operatorWrite, s.schedulerConfigSet)))
	mux.HandleFunc("GET /v1/status/leader", s.local(a(public, s.statusLeader)))
	mux.HandleFunc("GET /v1/status/peers", s.local(a(public, s.statusPeers)))
	mux.HandleFunc("GET /v1/operator/raft/configuration", s.read(a(operatorRead, s.raftConfiguration)))
	mux.HandleFunc("POST /v1/operator/raft/join", s.serverOnly(s.write(s.raftJoin)))
	mux.HandleFunc("DELETE /v1/operator/raft/peer", s.serverOnly(s.write(s.raftRemovePeer)))
	mux.HandleFunc("GET /v1/operator/snapshot", s.guard(management, s.snapshotSave))
	mux.HandleFunc("PUT /v1/operator/snapshot", s.guard(management, s.snapshotRestore))
	mux.HandleFunc("GET /v1/plugins", s.local(a(pluginRead, s.pluginList)))
	mux.HandleFunc("GET /v1/agent/self", s.local(a(agentRead, s.agentSelf)))
	mux.HandleFunc("GET /v1/agent/health", s.agentHealth)
	mux.HandleFunc("GET /v1/agent/members", s.local(a(agentRead, s.raftConfiguration)))
	mux.HandleFunc("PUT /v1/internal/member", s.serverOnly(s.write(s.memberUpsert)))
	mux.HandleFunc("GET /v1/internal/acl/index", s.read(s.allow(aServer, s.aclIndex)))
	mux.HandleFunc("GET /v1/metrics", s.guard(agentRead, s.metricsHandler))
	s.aclRoutes(mux)
	s.queueRoutes(mux)
	// The web UI (package ui) is public: its pages read the API above with
	// the user's token.
	mux.Handle("GET "+ui.Prefix, ui.Handler())
	mux.Handle("GET /{$}", http.RedirectHandler(ui.Prefix, http.StatusTemporaryRedirect))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allowed := allowedMethods(mux, r); len(allowed) > 0 {
			// As Nomad, a path served by other methods answers 405.
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			http.Error(w, fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or ")), http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path), http.StatusNotFound)
	})
}

// allowedMethods returns the methods mux serves r's path with, other than
// through the catch-all "/" route.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			out = append(out, m)
		}
	}
	return out
}

// jobList answers GET /v1/jobs: a JobListStub per job of ?namespace=, or
// of every namespace the token may list without one, with the list
// options (list.go); jobs are ordered by namespace and ID, or with
// ?sort=submit_time by their submit time (then namespace and ID), so
// that `?sort=submit_time&reverse=true&per_page=N` is the N newest.
func (s *Server) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	keys := byNamespacedID(func(j *structs.Job) string { return j.Namespace }, func(j *structs.Job) string { return j.ID })
	switch sort := r.URL.Query().Get("sort"); sort {
	case "":
	case "submit_time":
		byID := keys.token
		keys.token = func(j *structs.Job) string { return fmt.Sprintf("%020d.%s", max(j.SubmitTime, 0), byID(j)) }
	default:
		return nil, badRequest("sort=%q is not an order of jobs: the only one is submit_time", sort)
	}
	ns := r.URL.Query().Get("namespace")
	res, err := s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		jobs, err := state.Jobs(txn, ws, ns)
		if err != nil {
			return nil, err
		}
		nodes, err := state.Nodes(txn, ws)
		if err != nil {
			return nil, err
		}
		jobs = slices.DeleteFunc(jobs, func(j *structs.Job) bool {
			return s.allowNamespace(r, j.Namespace, acl.CapListJobs) != nil
		})
		// Only the page's stubs are built (and their rows watched): the
		// rest cannot change it.
		return applyBuilt(w, opts, jobs, keys,
			func(j *structs.Job) (*structs.JobListStub, error) { return s.jobStub(txn, ws, j, nodes) })
	}, state.TableJobs, state.TableDesired, state.TableObserved, state.TableModels, state.TableSamples, state.TableNodes))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// registeredJob turns a register request into a canonical, valid job
// that the server's JobPolicy allows.
func (s *Server) registeredJob(req *structs.JobRegisterRequest) (*structs.Job, error) {
	job := req.Job
	switch {
	case job != nil && req.JobHCL != "":
		return nil, badRequest("give either Job or JobHCL, not both")
	case req.JobHCL != "":
		var diags error
		job, diags = parseHCL(req)
		if diags != nil {
			return nil, badRequest("%v", diags)
		}
	case job == nil:
		return nil, badRequest("request has no Job and no JobHCL")
	case job.Nomad != nil:
		return nil, badRequest("Job.Nomad is set by Caravan for the jobs it finds in Nomad; run a Nomad job with nomad job run")
	}
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		return nil, badRequest("invalid job: %v", err)
	}
	if err := s.checkJobPolicy(job); err != nil {
		return nil, err
	}
	return job, nil
}

func parseHCL(req *structs.JobRegisterRequest) (*structs.Job, error) {
	name := req.Filename
	if name == "" {
		name = "job.hcl"
	}
	vars := make([]string, 0, len(req.Variables))
	for k, v := range req.Variables {
		vars = append(vars, k+"="+v)
	}
	slices.Sort(vars)
	job, diags := jobspec.Parse(&jobspec.Config{Filename: name, Src: []byte(req.JobHCL), ArgVars: vars})
	if diags.HasErrors() {
		return nil, diagnosticsError(diags)
	}
	return job, nil
}

// diagnosticsError lists every diagnostic as file:line:col: summary; detail.
func diagnosticsError(diags hcl.Diagnostics) error {
	var b strings.Builder
	b.WriteString("invalid jobspec:")
	for _, d := range diags {
		b.WriteString("\n")
		if d.Subject != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString("; " + d.Detail)
		}
	}
	return errors.New(b.String())
}

func (s *Server) jobRegister(mustBeNew bool) endpoint {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req structs.JobRegisterRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		job, err := s.registeredJob(&req)
		if err != nil {
			return nil, err
		}
		if id := r.PathValue("id"); id != "" && id != job.ID {
			return nil, badRequest("the path names job %q but the body job %q", id, job.ID)
		}
		if err := s.allowNamespace(r, job.Namespace, acl.CapSubmitJob); err != nil {
			return nil, err
		}
		ctx, cancel := applyContext(r)
		defer cancel()
		job.SubmitTime = s.now().UnixNano()
		return s.registerJob(ctx, job, mustBeNew)
	}
}

// registerJob commits a registration and says what it did. An active job
// with the same spec is left as it is: the answer says Unchanged. A job
// that could never be placed is refused first (checkFits).
func (s *Server) registerJob(ctx context.Context, job *structs.Job, mustBeNew bool) (*structs.JobRegisterResponse, error) {
	if err := s.checkFits(job); err != nil {
		return nil, err
	}
	if c := job.Elastic.Checkpoint; c != nil && c.Interval > 0 {
		// Servers before 0.2.0 would drop the interval: the job's
		// versions would differ between servers.
		if err := s.supportsErr(fsm.SampleAppendType); err != nil {
			return nil, fmt.Errorf("job %q: elastic.checkpoint.interval needs every server at 0.2.0 or later: %w", job.ID, err)
		}
	}
	req := &fsm.JobRegisterRequest{Job: job, MustBeNew: mustBeNew, Time: job.SubmitTime, FreshRun: s.supports(fsm.SampleAppendType)}
	out, index, err := s.apply(ctx, fsm.JobRegisterType, req)
	if err != nil {
		return nil, err
	}
	reg, ok := out.(fsm.JobRegisterResponse)
	if !ok {
		return nil, fmt.Errorf("register job %q: unexpected answer %T from the state machine", job.ID, out)
	}
	return &structs.JobRegisterResponse{JobID: job.ID, Version: reg.Version, Unchanged: reg.Unchanged, Index: index}, nil
}

// report commits samples trainers report. The whole request is checked
// before anything is committed: an invalid sample, or one stamped more than
// structs.MaxSampleSkew ahead of this server's clock, answers 400, and a
// sample of a job the server does not hold 404 (the first such job). A
// leader that has not yet established its state (applied the log of the
// terms before its own, see reads.go) cannot tell an unknown job from one
// it has not replayed yet: it answers 503 with Retry-After instead, which
// reporters retry, so that no sample is dropped across a restart.
// Samples the trainer did not time are stamped now. Samples of a job that
// has ended are accepted and dropped when applied, so a trainer flushing
// its last samples after its job stopped is not told it failed; Accepted
// counts the samples kept, and those that repeat a stored sample (same
// job, task, step, time and configuration): a report retried after an
// ambiguous answer is accepted again and stored once. The leader feeds
// them to the models at its next poll.
func (s *Server) report(w http.ResponseWriter, r *http.Request) (any, error) {
	var req structs.ReportRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := checkReport(&req, s.now()); err != nil {
		return nil, err
	}
	txn := s.State().Txn()
	known := map[structs.JobKey]bool{}
	for i, smp := range req.Samples {
		key := structs.NewJobKey(smp.Namespace, smp.JobID)
		if known[key] {
			continue
		}
		if err := s.allowNamespace(r, smp.Namespace, acl.CapReport); err != nil {
			return nil, err
		}
		if err := s.allowReport(r, key); err != nil {
			return nil, err
		}
		job, err := state.JobByID(txn, nil, smp.Namespace, smp.JobID)
		if err != nil {
			return nil, err
		}
		if job == nil && !s.establishedState() {
			w.Header().Set("Retry-After", "1")
			return nil, &CodedError{Code: http.StatusServiceUnavailable, Err: fmt.Errorf("samples[%d]: job %q in namespace %q is not known yet: this server has not established its state since it became leader; retry (nothing of the report was kept)", i, smp.JobID, smp.Namespace)}
		}
		if job == nil {
			return nil, notFound("samples[%d]: job %q in namespace %q is not registered; nothing of the report was kept", i, smp.JobID, smp.Namespace)
		}
		known[key] = true
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	resp := &structs.ReportResponse{}
	typ := s.sampleType()
	for batch := range slices.Chunk(req.Samples, maxSampleBatch) {
		out, index, err := s.apply(ctx, typ, &fsm.SampleBatchRequest{Samples: batch})
		if err != nil {
			return nil, err
		}
		appended := out.(fsm.SampleBatchResponse)
		resp.Accepted += appended.Kept + appended.Repeated
		resp.Index = index
	}
	return resp, nil
}

// checkReport checks a report's samples at now, the receiving server's
// time, and fills in what a trainer may leave out: a sample without a
// Namespace is the default namespace's, one without a Time is stamped now.
// Its error, a 400, names every invalid sample.
func checkReport(req *structs.ReportRequest, now time.Time) error {
	if len(req.Samples) == 0 {
		return badRequest("request has no samples")
	}
	var errs []error
	for i := range req.Samples {
		smp := &req.Samples[i]
		if err := errors.Join(smp.Validate(), smp.ValidateTime(now)); err != nil {
			errs = append(errs, fmt.Errorf("samples[%d]: %w", i, err))
		}
		if smp.Namespace == "" {
			smp.Namespace = structs.DefaultNamespace
		}
		if smp.Time == 0 {
			smp.Time = now.UnixNano()
		}
	}
	if len(errs) > 0 {
		return badRequest("invalid report: %v", errors.Join(errs...))
	}
	return nil
}

// jobPlan answers a dry run: how the job differs from its registered
// version, and the placement the scheduler would give it now. Only the
// leader has the models to answer it.
func (s *Server) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	var req structs.JobRegisterRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	job, err := s.registeredJob(&req)
	if err != nil {
		return nil, err
	}
	if err := s.allowNamespace(r, job.Namespace, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	txn := s.State().Txn()
	prev, err := state.JobByID(txn, nil, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	resp := &structs.PlanResponse{Diff: prev.Diff(job)}
	if prev != nil {
		resp.Version, resp.Status = prev.Version, prev.Status
	}
	if prev != nil && !structs.Terminal(prev.Status) {
		hist, err := state.Placements(txn, nil, job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		if len(hist) > 0 {
			resp.Current = hist[0].Placement
		}
	}
	if resp.Plan, err = s.dryRun(r.Context(), job); err != nil {
		return nil, err
	}
	for _, p := range resp.Plan.Placements {
		if p.Key() == job.Key() {
			resp.Placement = p
		}
	}
	resp.Changed = prev == nil || structs.Terminal(prev.Status) || resp.Diff.Changed() ||
		!resp.Placement.SameTasks(resp.Current)
	return resp, nil
}

func (s *Server) jobByPath(txn *memdb.Txn, ws memdb.WatchSet, r *http.Request) (*structs.Job, error) {
	id := r.PathValue("id")
	job, err := state.JobByID(txn, ws, namespace(r), id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, fmt.Errorf("job %q in namespace %q: %w", id, namespace(r), state.ErrJobNotFound)
	}
	return job, nil
}

func (s *Server) jobRead(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		return s.jobByPath(txn, ws, r)
	}, state.TableJobs))
}

func (s *Server) jobVersions(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		if _, err := s.jobByPath(txn, ws, r); err != nil {
			return nil, err
		}
		return state.JobVersions(txn, ws, namespace(r), r.PathValue("id"))
	}, state.TableVersions))
}

// jobRevert registers a stored version's spec as the job's next version,
// as Nomad's job revert: a registration like any other, so reverting to the
// active job's own spec changes nothing.
func (s *Server) jobRevert(w http.ResponseWriter, r *http.Request) (any, error) {
	var req structs.JobRevertRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	txn := s.State().Txn()
	cur, err := s.jobByPath(txn, nil, r)
	if err != nil {
		return nil, err
	}
	if p := req.EnforcePriorVersion; p != nil && *p != cur.Version {
		return nil, &CodedError{Code: http.StatusConflict,
			Err: fmt.Errorf("revert job %q: the current version is %d, not %d", cur.ID, cur.Version, *p)}
	}
	versions, err := state.JobVersions(txn, nil, cur.Namespace, cur.ID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(versions, func(v *structs.Job) bool { return v.Version == req.Version })
	if i < 0 {
		return nil, notFound("job %q has no version %d", cur.ID, req.Version)
	}
	job := versions[i].Copy()
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		return nil, badRequest("version %d of job %q is not valid today: %v", req.Version, cur.ID, err)
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	job.SubmitTime = s.now().UnixNano()
	return s.registerJob(ctx, job, false)
}

func (s *Server) jobHistory(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		if _, err := s.jobByPath(txn, ws, r); err != nil {
			return nil, err
		}
		hist, err := state.Placements(txn, ws, namespace(r), r.PathValue("id"))
		return orEmpty(hist), err
	}, state.TablePlacements, state.TableJobs))
}

func (s *Server) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		job, err := s.jobByPath(txn, ws, r)
		if err != nil {
			return nil, err
		}
		sum := &structs.JobSummary{Job: job, SimSpeed: s.cfg.SimSpeed}
		if sum.Placement, err = state.Desired(txn, ws, job.Namespace, job.ID); err != nil {
			return nil, err
		}
		if sum.Observed, err = state.ObservedOf(txn, ws, job.Namespace, job.ID); err != nil {
			return nil, err
		}
		nodes, err := state.Nodes(txn, ws)
		if err != nil {
			return nil, err
		}
		var desired, observed *structs.Placement
		if sum.Placement != nil {
			desired = sum.Placement.Placement
		}
		if sum.Observed != nil {
			observed = sum.Observed.Placement
		}
		sum.GPUTypes = structs.PlacementGPUTypes(nodes, desired, observed)
		queues, err := state.Queues(txn, ws)
		if err != nil {
			return nil, err
		}
		if len(queues) > 0 {
			sum.Queue = structs.QueueFor(queues, job.Namespace)
		}
		if sum.Model, err = s.currentModel(txn, ws, job); err != nil {
			return nil, err
		}
		if sum.Model != nil && structs.Terminal(job.Status) {
			c := *sum.Model
			c.RemainingSeconds = 0
			sum.Model = &c
		}
		if sum.Usage, err = state.UsageOf(txn, ws, job.Namespace, job.ID); err != nil {
			return nil, err
		}
		smp, err := state.Samples(txn, ws, job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		if last, ok := lastOwn(smp); ok {
			sum.Samples = smp.Received
			sum.LastSample = &last
		}
		return sum, nil
	}, state.TableJobs, state.TableDesired, state.TableObserved, state.TableModels, state.TableSamples, state.TableUsage, state.TableNodes, state.TableQueues))
}

// jobSamples returns the job's kept samples, oldest first.
func (s *Server) jobSamples(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		job, err := s.jobByPath(txn, ws, r)
		if err != nil {
			return nil, err
		}
		smp, err := state.Samples(txn, ws, job.Namespace, job.ID)
		if err != nil || smp != nil {
			return smp, err
		}
		return &structs.JobSamples{Namespace: job.Namespace, JobID: job.ID, Samples: []structs.Sample{}}, nil
	}, state.TableJobs, state.TableSamples))
}

func (s *Server) jobStop(w http.ResponseWriter, r *http.Request) (any, error) {
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.JobStopType, &fsm.JobStopRequest{Namespace: namespace(r), JobID: id, Purge: purge, Time: s.now().UnixNano()})
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"Index": index}, nil
}

// nodeList answers GET /v1/nodes, with the list options (list.go); nodes
// are ordered by ID. While the driver cannot read the cluster, the nodes
// are the ones it last read, and setDriverHealth's headers say so.
func (s *Server) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	res, err := s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		nodes, err := state.Nodes(txn, ws)
		if err != nil {
			return nil, err
		}
		return orEmpty(nodes), setDriverHealth(w, txn)
	}, state.TableNodes))
	if err != nil {
		return nil, err
	}
	return apply(w, opts, res.([]*structs.Node), byID(func(n *structs.Node) string { return n.ID }))
}

// nodeRead answers GET /v1/node/<id>: the node, and what runs there as
// the driver last reported it, with setDriverHealth's headers.
func (s *Server) nodeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		nodes, err := state.Nodes(txn, ws)
		if err != nil {
			return nil, err
		}
		if err := setDriverHealth(w, txn); err != nil {
			return nil, err
		}
		i := slices.IndexFunc(nodes, func(n *structs.Node) bool { return n.ID == id })
		if i < 0 {
			return nil, notFound("no node %q", id)
		}
		out := &structs.NodeDetail{Node: nodes[i], Tasks: []*structs.NodeJobTasks{}}
		for _, d := range out.Node.Devices {
			if d.Type == "gpu" {
				out.GPUsTotal += len(d.Instances)
			}
		}
		observed, err := state.AllObserved(txn, ws)
		if err != nil {
			return nil, err
		}
		for _, o := range observed {
			if o.Placement == nil {
				continue
			}
			job, err := state.JobByID(txn, ws, o.Namespace, o.JobID)
			if err != nil {
				return nil, err
			}
			if job == nil || structs.Terminal(job.Status) || s.allowNamespace(r, job.Namespace, acl.CapReadJob) != nil {
				continue
			}
			t := &structs.NodeJobTasks{Namespace: o.Namespace, JobID: o.JobID}
			for _, n := range o.Placement.Nodes {
				if n.NodeID == id {
					t.PS += n.PS
					t.Workers += n.Workers
				}
			}
			if t.PS+t.Workers == 0 {
				continue
			}
			t.GPUs = placementGPUs(job, &structs.Placement{NumPS: t.PS, NumWorkers: t.Workers})
			out.GPUsUsed += t.GPUs
			out.Tasks = append(out.Tasks, t)
		}
		return out, nil
	}, state.TableNodes, state.TableObserved, state.TableJobs))
}

func (s *Server) planLatest(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		plan, err := state.LatestPlan(txn, ws)
		if err == nil && plan == nil {
			return nil, notFound("no plan has been committed yet")
		}
		return plan, err
	}, state.TableDecision, state.TableDesired, state.TableJobs))
}

func (s *Server) eventList(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := eventParams(r); err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
		return s.events(txn, ws, r)
	})
}

// eventQuery is what the events endpoints select: the events committed
// after the Raft index after, of job in namespace (any namespace when
// empty; with no job, the events of no job are kept too), that filter
// selects.
type eventQuery struct {
	after     uint64
	job       string
	namespace string
	filter    *bexpr.Evaluator
}

// eventParams reads ?index=, ?job=, ?namespace= and ?filter=.
func eventParams(r *http.Request) (*eventQuery, error) {
	q := r.URL.Query()
	eq := &eventQuery{job: q.Get("job"), namespace: q.Get("namespace")}
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, badRequest("index %q is not a non-negative integer", v)
		}
		eq.after = n
	}
	var err error
	eq.filter, err = parseFilter(r)
	return eq, err
}

func (q *eventQuery) match(e *structs.Event) (bool, error) {
	switch {
	case e.Index <= q.after:
		return false, nil
	case q.job != "" && e.JobID != q.job:
		return false, nil
	case q.namespace != "" && e.Namespace != q.namespace && !(q.job == "" && e.Namespace == ""):
		return false, nil
	case q.filter != nil:
		ok, err := q.filter.Evaluate(e)
		if err != nil {
			return false, badRequest("filter: %v", err)
		}
		return ok, nil
	}
	return true, nil
}

// events reads the events eventParams selects, oldest first. The index it
// returns is the Raft index of the newest event kept, so that a blocking
// query with it waits for the next event, as Nomad's event stream index.
func (s *Server) events(txn *memdb.Txn, ws memdb.WatchSet, r *http.Request) ([]*structs.Event, uint64, error) {
	q, err := eventParams(r)
	if err != nil {
		return nil, 0, err
	}
	all, err := state.Events(txn, ws, 0)
	if err != nil {
		return nil, 0, err
	}
	last := q.after
	if len(all) > 0 {
		last = max(last, all[len(all)-1].Index)
	}
	out := []*structs.Event{}
	for _, e := range all {
		ok, err := q.match(e)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, last, nil
}

func (s *Server) schedulerConfigGet(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		cfg, err := state.SchedulerConfig(txn, ws)
		if err == nil && cfg == nil {
			return nil, notFound("no scheduler configuration yet: the cluster has not elected its first leader")
		}
		return cfg, err
	}, state.TableConfig))
}

func (s *Server) schedulerConfigSet(w http.ResponseWriter, r *http.Request) (any, error) {
	var req structs.SchedulerConfigRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	cfg, err := s.schedulerConfig(&req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.SchedulerConfigType, &fsm.SchedulerConfigRequest{Config: cfg, Time: s.now().UnixNano()})
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"Index": index}, nil
}

// schedulerConfig returns the configuration a request sets, once this
// server has built its algorithm with its options: a configuration no
// algorithm accepts is a 400, never committed.
func (s *Server) schedulerConfig(req *structs.SchedulerConfigRequest) (*structs.SchedulerConfig, error) {
	cfg := &structs.SchedulerConfig{Algorithm: req.Algorithm, Options: req.Options}
	if _, err := s.newAlgorithm(cfg); err != nil {
		return nil, badRequest("%v", err)
	}
	return cfg, nil
}

// pluginList describes the algorithms this server can run; each server
// answers for its own plugins.
func (s *Server) pluginList(w http.ResponseWriter, r *http.Request) (any, error) {
	return orEmpty(s.cfg.Algorithms.Plugins()), nil
}

func (s *Server) statusLeader(w http.ResponseWriter, r *http.Request) (any, error) {
	addr, _ := s.raft.LeaderWithID()
	return string(addr), nil
}

func (s *Server) statusPeers(w http.ResponseWriter, r *http.Request) (any, error) {
	conf, err := s.raftConfig()
	if err != nil {
		return nil, err
	}
	peers := []string{}
	for _, sv := range conf.Servers {
		peers = append(peers, sv.Address)
	}
	return peers, nil
}

func (s *Server) raftConfig() (*structs.RaftConfiguration, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("read raft configuration: %w", err)
	}
	_, leader := s.raft.LeaderWithID()
	members, err := state.Members(s.State().Txn(), nil)
	if err != nil {
		return nil, err
	}
	out := &structs.RaftConfiguration{Index: f.Index(), Servers: []*structs.RaftServer{}}
	for _, sv := range f.Configuration().Servers {
		rs := &structs.RaftServer{ID: string(sv.ID), Address: string(sv.Address), Leader: sv.ID == leader, Voter: sv.Suffrage == raft.Voter}
		for _, m := range members {
			if m.ID == rs.ID {
				rs.Name, rs.HTTPAddr, rs.Version = m.Name, m.HTTPAddr, m.Version
			}
		}
		out.Servers = append(out.Servers, rs)
	}
	return out, nil
}

func (s *Server) raftConfiguration(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.raftConfig()
}

func (s *Server) raftJoin(w http.ResponseWriter, r *http.Request) (any, error) {
	var req structs.JoinRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.ID == "" || req.RaftAddr == "" || req.HTTPAddr == "" {
		return nil, badRequest("a join request needs ID, RaftAddr and HTTPAddr")
	}
	if err := s.validateJoin(req); err != nil {
		return nil, err
	}
	return nil, s.addPeer(req)
}

func (s *Server) raftRemovePeer(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return nil, badRequest("give the server to remove as ?id=")
	}
	conf, err := s.raftConfig()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(conf.Servers, func(sv *structs.RaftServer) bool { return sv.ID == id }) {
		return nil, notFound("no server %q in the raft configuration", id)
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	return nil, s.removePeer(ctx, id)
}

func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.self(), nil
}

// agentHealth answers 200 when the server knows a leader, 503 otherwise.
func (s *Server) agentHealth(w http.ResponseWriter, r *http.Request) {
	h := structs.Health{OK: true, Message: "ok"}
	if _, id := s.raft.LeaderWithID(); id == "" {
		h = structs.Health{Message: ErrNoLeader.Error()}
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, h)
}

func (s *Server) memberUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var m structs.Member
	if err := decode(r, &m); err != nil {
		return nil, err
	}
	if m.ID == "" || m.HTTPAddr == "" || m.RaftAddr == "" {
		return nil, badRequest("a member needs ID, RaftAddr and HTTPAddr")
	}
	if err := s.validateMember(&m); err != nil {
		return nil, err
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, _, err := s.apply(ctx, fsm.MemberUpsertType, &fsm.MemberUpsertRequest{Member: &m})
	return nil, err
}
