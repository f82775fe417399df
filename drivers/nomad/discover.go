package nomad

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// jobsView is the driver's view of Nomad's jobs, kept by watchJobs from
// one list it follows with blocking queries: the Nomad jobs Caravan
// submitted, with their specs, and what every job declares.
type jobsView struct {
	// listIndex is Nomad's index of the last list read; index moves
	// whenever the declarations change (see Declared).
	listIndex, index uint64
	// err is the last list's error; ok says a list was read once, so
	// that the view holds what it said.
	err error
	ok  bool
	// caravan holds, by Caravan job, the Nomad jobs whose current version
	// Caravan submitted: a job declared in Nomad whose user's version is
	// current is not Caravan's (yet, or any more).
	caravan map[structs.JobKey]*nomadJob
	// decl holds a declaration per Nomad job.
	decl map[structs.JobKey]*structs.Declaration
	// profiles are the profiling runs Nomad holds (profile.go).
	profiles []profileRun
}

// Declared returns a declaration per Nomad job, as watchJobs last read
// them, without calling Nomad, and an index of that view which moves
// whenever it changes: Nomad's index of the list it was read from, or one
// more than the last when only a job read again changed it. A Nomad job
// whose groups carry a caravan scaling policy declares a job (see
// jobspec.FromNomad). The map is the caller's.
//
// A job is never dropped because a read failed or raced. A version that
// cannot be read (Nomad failed, or the job changed between the list and
// the read) leaves the job its previous declaration, and is read again,
// with backoff, until a read succeeds; a job first seen at such a version
// has no declaration until then. A job the view holds that a list does
// not show is gone only once Nomad answers 404 for its ID; until then it
// keeps its declaration and is asked about again. The leader reads a
// missing declaration of a job it holds as a purge: only Nomad's word
// makes one.
//
// It waits for the first list at most CallTimeout (the driver just
// started), and fails while the last list failed rather than answer from
// a view it knows is stale.
func (d *Driver) Declared(ctx context.Context) (map[structs.JobKey]*structs.Declaration, uint64, error) {
	if err := d.awaitFirst(ctx, d.viewed, "Nomad's jobs"); err != nil {
		return nil, 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.view.err != nil {
		return nil, 0, d.view.err
	}
	return maps.Clone(d.view.decl), d.view.index, nil
}

// jobsView returns the view of Nomad's jobs; its maps are never changed
// once published.
func (d *Driver) jobsView() jobsView {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.view
}

// watchJobs follows Nomad's job list with blocking queries, for the
// declarations (Declared) and Caravan's own jobs (Enact and Status). A
// version is read in full (Jobs().Info) only when it is new: a user's
// running version not declared before, or a running version of Caravan's
// not read before (Status needs its groups). Stopped jobs and the
// declarations of Caravan's versions are told by the list alone. Jobs
// whose read failed or raced are read again after a backoff, through a
// list that then waits no longer than that.
func (d *Driver) watchJobs(ctx context.Context) {
	var retry time.Duration
	specs := map[namespacedID]*api.Job{}
	var reread map[namespacedID]bool
	follow(ctx, func(index uint64) ([]*api.JobListStub, *api.QueryMeta, error) {
		wait := d.cfg.WaitTime
		if len(reread) > 0 {
			retry = nextBackoff(retry)
			wait = min(wait, retry)
		} else {
			retry = 0
		}
		return d.listJobs(ctx, index, wait)
	}, func(err error) {
		d.setJobsErr(fmt.Errorf("list Nomad jobs: %w", err))
	}, func(stubs []*api.JobListStub, index uint64) {
		var caravan map[structs.JobKey]*nomadJob
		var decl map[structs.JobKey]*structs.Declaration
		caravan, decl, reread = d.readJobs(ctx, stubs, d.jobsView().decl, specs, reread)
		if ctx.Err() == nil {
			d.setJobs(index, caravan, decl, profileRuns(stubs))
		}
	})
}

// listJobs lists Nomad's jobs with their metadata, blocking until Nomad's
// index passes index or wait passes.
func (d *Driver) listJobs(ctx context.Context, index uint64, wait time.Duration) ([]*api.JobListStub, *api.QueryMeta, error) {
	ctx, cancel := d.blockingContext(ctx, wait)
	defer cancel()
	q := (&api.QueryOptions{Namespace: d.queryNamespace(), WaitIndex: index, WaitTime: wait}).WithContext(ctx)
	return d.client.Jobs().ListOptions(&api.JobListOptions{Fields: &api.JobListFields{Meta: true}}, q)
}

// readJobs builds the view of one list: Caravan's Nomad jobs with their
// specs (read when their version is new, kept in specs by job), and a
// declaration per job (prev's when the version is the same). It returns
// the jobs to read again at the next list: those whose read failed or
// raced (reread names the ones of the last list), which keep prev's
// declaration meanwhile, and those prev declared that the list does not
// show but that Nomad did not confirm gone.
func (d *Driver) readJobs(ctx context.Context, stubs []*api.JobListStub, prev map[structs.JobKey]*structs.Declaration,
	specs map[namespacedID]*api.Job, reread map[namespacedID]bool,
) (map[structs.JobKey]*nomadJob, map[structs.JobKey]*structs.Declaration, map[namespacedID]bool) {
	caravan := map[structs.JobKey]*nomadJob{}
	decl := make(map[structs.JobKey]*structs.Declaration, len(stubs))
	again := map[namespacedID]bool{}
	listed := make(map[namespacedID]bool, len(stubs))
	for _, s := range stubs {
		id := namespacedID{Namespace: s.Namespace, ID: s.ID}
		listed[id] = true
		if jobID, ok := s.Meta[metaJobID]; ok {
			gen, _ := strconv.Atoi(s.Meta[metaGeneration])
			nj := &nomadJob{stub: s, generation: gen}
			if !s.Stop {
				if nj.info = d.spec(ctx, s, specs, reread[id]); nj.info == nil {
					again[id] = true
				}
			}
			// A job renamed by an upgrade (NomadJobID) has two Nomad jobs
			// until its old one is stopped: the one that runs, else the
			// newer generation, is the job's.
			ck := structs.JobKey{Namespace: s.Meta[metaNamespace], ID: jobID}
			if had := caravan[ck]; had == nil || had.stub.Stop && !s.Stop || had.stub.Stop == s.Stop && gen > had.generation {
				caravan[ck] = nj
			}
		}
		key := structs.JobKey{Namespace: s.Namespace, ID: s.ID}
		p := prev[key]
		if p != nil && !reread[id] && p.Index == s.JobModifyIndex && (p.Kind == structs.DeclaredStopped) == s.Stop {
			decl[key] = p
			continue
		}
		if dc := d.declaration(ctx, s, reread[id]); dc != nil {
			decl[key] = dc
			continue
		}
		again[id] = true
		if p != nil {
			decl[key] = p // kept until its version is read
		}
	}
	for key, p := range prev {
		id := namespacedID(key)
		if listed[id] {
			continue
		}
		if d.confirmGone(ctx, id, reread[id]) {
			continue
		}
		decl[key], again[id] = p, true
	}
	for id := range specs {
		if !listed[id] {
			delete(specs, id)
		}
	}
	return caravan, decl, again
}

// spec returns the spec of a running Nomad job of Caravan's at the
// listed version: from specs when it was read, else read now and kept
// there. Nil when the read failed or the job changed since the list (the
// next list has it); retried says the job failed before, for the log.
func (d *Driver) spec(ctx context.Context, s *api.JobListStub, specs map[namespacedID]*api.Job, retried bool) *api.Job {
	id := namespacedID{Namespace: s.Namespace, ID: s.ID}
	if info := specs[id]; info != nil && info.JobModifyIndex != nil && *info.JobModifyIndex == s.JobModifyIndex {
		return info
	}
	info, err := d.readJob(ctx, id)
	if err != nil {
		d.readFailed(s.ID, s.Namespace, err, retried)
		return nil
	}
	specs[id] = info
	if info.JobModifyIndex == nil || *info.JobModifyIndex != s.JobModifyIndex {
		return nil
	}
	return info
}

// readJob reads a Nomad job as it is now.
func (d *Driver) readJob(ctx context.Context, id namespacedID) (*api.Job, error) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	info, _, err := d.client.Jobs().Info(id.ID, (&api.QueryOptions{Namespace: id.Namespace}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("read Nomad job %s: %w", id.ID, err)
	}
	return info, nil
}

// readFailed logs a failed read of a job's version: at warn level the
// first time, at debug level when it fails again.
func (d *Driver) readFailed(id, namespace string, err error, retried bool) {
	if errors.Is(err, context.Canceled) {
		return
	}
	log := d.log.Warn
	if retried {
		log = d.log.Debug
	}
	log("cannot read Nomad job, keeping what was read before and trying again", "nomad_job", id, "namespace", namespace, "error", err)
}

// confirmGone asks Nomad about a job a list did not show: it is gone only
// when Nomad answers 404 for its ID.
func (d *Driver) confirmGone(ctx context.Context, id namespacedID, retried bool) bool {
	_, err := d.readJob(ctx, id)
	switch {
	case isNotFound(err):
		return true
	case err != nil:
		d.readFailed(id.ID, id.Namespace, err, retried)
	case !retried:
		d.log.Warn("Nomad's job list left out a job it still has; keeping its declaration", "nomad_job", id.ID, "namespace", id.Namespace)
	}
	return false
}

// setJobs publishes the view of one list. The declarations' index moves
// with Nomad's, and by one when only they changed, so that the leader
// acts on a job read again.
func (d *Driver) setJobs(index uint64, caravan map[structs.JobKey]*nomadJob, decl map[structs.JobKey]*structs.Declaration, profiles []profileRun) {
	d.mu.Lock()
	v := &d.view
	if v.err != nil {
		d.log.Info("reading Nomad's jobs again")
	}
	if index > v.index || !sameDeclarations(v.decl, decl) {
		v.index = max(index, v.index+1)
	}
	v.listIndex, v.err, v.ok, v.caravan, v.decl, v.profiles = index, nil, true, caravan, decl, profiles
	d.mu.Unlock()
	d.viewOnce.Do(func() { close(d.viewed) })
}

// setJobsErr records a failed list; the view keeps what the last list
// said.
func (d *Driver) setJobsErr(err error) {
	d.mu.Lock()
	if d.view.err == nil {
		d.log.Warn("cannot read Nomad's jobs", "error", err)
	}
	d.view.err = err
	d.mu.Unlock()
	d.viewOnce.Do(func() { close(d.viewed) })
}

// sameDeclarations reports whether two views declare the same, entry by
// entry (a declaration is never changed once made).
func sameDeclarations(a, b map[structs.JobKey]*structs.Declaration) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// declaration says what a Nomad job's current version is; nil when it
// cannot be read now, or changed since the list (the caller keeps what
// was declared before, and reads it again).
func (d *Driver) declaration(ctx context.Context, s *api.JobListStub, retried bool) *structs.Declaration {
	decl := &structs.Declaration{Namespace: s.Namespace, JobID: s.ID, Index: s.JobModifyIndex}
	switch {
	case s.Stop:
		decl.Kind = structs.DeclaredStopped
		return decl
	case s.Meta[metaJobID] != "", s.Meta[metaRejected] != "":
		decl.Kind = structs.DeclaredManaged // run, or rejected, by Caravan
		return decl
	case s.Meta[metaProfileOf] != "":
		decl.Kind = structs.DeclaredPlain // a profiling run Caravan submitted
		return decl
	case s.ParentID != "" || s.Type == api.JobTypeSystem || s.Type == api.JobTypeSysbatch:
		decl.Kind = structs.DeclaredPlain // launched by another job, or on every node
		return decl
	}
	info, err := d.readJob(ctx, namespacedID{Namespace: s.Namespace, ID: s.ID})
	if err != nil {
		d.readFailed(s.ID, s.Namespace, err, retried)
		return nil
	}
	if info.JobModifyIndex == nil || *info.JobModifyIndex != s.JobModifyIndex {
		return nil // changed since the list
	}
	if !jobspec.HasPolicy(info) {
		decl.Kind = structs.DeclaredPlain
		return decl
	}
	decl.Name = deref(info.Name)
	job, diags := jobspec.FromNomad(info)
	if diags.HasErrors() {
		// The source the user submitted, when Nomad kept it, says where
		// each error is; the API's job only which group and field.
		decl.Kind, decl.Errors = structs.DeclaredInvalid, d.submittedDiagnostics(ctx, info)
		if len(decl.Errors) == 0 {
			decl.Errors = describe(diags, false)
		}
		decl.Message = strings.Join(decl.Errors, "; ")
		return decl
	}
	decl.Kind, decl.Job = structs.DeclaredJob, job
	return decl
}

// describe renders the errors of a Nomad job's caravan policy, one line
// each, after the file it is in (for a job read from Nomad's API, the
// group and field it is about), and with at after its line and column
// there: positions in a policy read from the API are within Caravan's
// JSON of it, which would mislead.
func describe(diags hcl.Diagnostics, at bool) []string {
	var parts []string
	for _, diag := range diags {
		if diag.Severity != hcl.DiagError {
			continue
		}
		msg := diag.Summary
		if diag.Detail != "" {
			msg += ": " + strings.TrimSuffix(diag.Detail, ".")
		}
		if s := diag.Subject; s != nil && s.Filename != "" {
			where := s.Filename
			if at && s.Start.Line > 0 {
				where = fmt.Sprintf("%s:%d:%d", s.Filename, s.Start.Line, s.Start.Column)
			}
			msg = where + ": " + msg
		}
		parts = append(parts, strings.ReplaceAll(msg, "\n", " "))
	}
	return parts
}
