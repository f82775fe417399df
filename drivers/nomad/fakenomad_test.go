package nomad

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// fakeNomad is an HTTP server that answers the part of Nomad's API the
// driver uses, from jobs, allocations and nodes the test sets, with
// blocking queries on one index, as Nomad's state store has. The test can
// make it fail (fault), hang (stall) and leave jobs out of its list.
type fakeNomad struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// index is Nomad's index; changed is closed and replaced when it
	// moves, which wakes the blocking queries.
	index   uint64
	changed chan struct{}
	// released ends every stalled request when the test ends.
	released chan struct{}
	jobs     map[string]*api.Job
	versions map[string][]*api.Job
	allocs   map[string]*api.AllocationListStub
	nodes    map[string]*api.Node
	// evals are the evaluations of each job, as the test sets them.
	evals map[string][]*api.Evaluation
	// hidden jobs are left out of the job list, as a stale list would.
	hidden map[string]bool
	// fault, when set, answers a request instead of the handler: a status
	// code, or stall to hang until the request ends.
	fault func(r *http.Request) (status int, stall bool)
	// onInfo, when set, is called before a job read is answered, with the
	// lock held.
	onInfo func(id string)
	// stallEnd is closed, and replaced, when the fault is set again: it
	// ends the requests the last fault stalled.
	stallEnd chan struct{}
	// requests counts the requests by endpoint ("GET /v1/jobs"), faults
	// included; signals records the allocations signalled.
	requests map[string]int
	signals  []string
	// evaluated records the evaluations read.
	evaluated []string
}

// newFakeNomad starts a fake Nomad with one ready node. It stops when the
// test ends; stalled requests are released first.
func newFakeNomad(t *testing.T) *fakeNomad {
	f := &fakeNomad{
		t: t, index: 1, changed: make(chan struct{}), released: make(chan struct{}), stallEnd: make(chan struct{}),
		jobs: map[string]*api.Job{}, versions: map[string][]*api.Job{}, allocs: map[string]*api.AllocationListStub{},
		nodes: map[string]*api.Node{}, hidden: map[string]bool{}, requests: map[string]int{},
	}
	f.nodes["n1"] = &api.Node{ID: "n1", Name: "n1", Datacenter: "dc1", Status: "ready", SchedulingEligibility: api.NodeSchedulingEligible, ModifyIndex: 1,
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000}, Memory: api.NodeMemoryResources{MemoryMB: 16384}}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.released)
		f.srv.Close()
	})
	return f
}

// bump moves the index and wakes the blocking queries; the caller holds
// the lock.
func (f *fakeNomad) bump() uint64 {
	f.index++
	close(f.changed)
	f.changed = make(chan struct{})
	return f.index
}

// setFault sets (or, with nil, clears) the fault; the requests the last
// one stalled end without an answer.
func (f *fakeNomad) setFault(fault func(r *http.Request) (int, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
	close(f.stallEnd)
	f.stallEnd = make(chan struct{})
}

// putJob stores a job as a `nomad job run` would: a new version at a new
// modify index. It returns the index.
func (f *fakeNomad) putJob(job *api.Job) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.putJobLocked(job)
}

func (f *fakeNomad) putJobLocked(job *api.Job) uint64 {
	job.Canonicalize()
	idx := f.bump()
	version := uint64(0)
	if old := f.jobs[*job.ID]; old != nil {
		version = *old.Version + 1
		if job.CreateIndex == nil {
			job.CreateIndex = old.CreateIndex
		}
	}
	if job.CreateIndex == nil {
		job.CreateIndex = new(idx)
	}
	job.Version, job.JobModifyIndex, job.ModifyIndex = new(version), new(idx), new(idx)
	job.Stop, job.Status = new(false), new("running")
	f.jobs[*job.ID] = job
	f.versions[*job.ID] = append([]*api.Job{job}, f.versions[*job.ID]...)
	return idx
}

// purge removes a job, as `nomad job stop -purge` does.
func (f *fakeNomad) purge(id string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.jobs, id)
	delete(f.versions, id)
	return f.bump()
}

// touch moves the index without changing any job, as another job's
// change would.
func (f *fakeNomad) touch() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bump()
}

// hide leaves a job out of the list, or puts it back, and moves the index.
func (f *fakeNomad) hide(id string, hidden bool) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hidden[id] = hidden
	return f.bump()
}

// runAll makes every group of a job's current version run its count of
// allocations, replacing the job's others.
func (f *fakeNomad) runAll(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	job := f.jobs[id]
	for aid, a := range f.allocs {
		if a.JobID == id {
			delete(f.allocs, aid)
		}
	}
	for _, tg := range job.TaskGroups {
		for i := range *tg.Count {
			aid := fmt.Sprintf("%s-v%d-%s-%d", id, *job.Version, *tg.Name, i)
			tasks := map[string]*api.TaskState{}
			for _, task := range tg.Tasks {
				tasks[task.Name] = &api.TaskState{State: "running"}
			}
			f.allocs[aid] = &api.AllocationListStub{
				ID: aid, Name: fmt.Sprintf("%s.%s[%d]", id, *tg.Name, i), Namespace: *job.Namespace, NodeID: "n1",
				JobID: id, JobVersion: *job.Version, TaskGroup: *tg.Name,
				DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning, TaskStates: tasks,
			}
		}
	}
	f.bump()
}

// endAll makes every allocation of a job stopped and complete.
func (f *fakeNomad) endAll(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.allocs {
		if a.JobID == id {
			a.DesiredStatus, a.ClientStatus = api.AllocDesiredStatusStop, api.AllocClientStatusComplete
		}
	}
	f.bump()
}

// count returns how many requests an endpoint got; "" counts them all.
func (f *fakeNomad) count(endpoint string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if endpoint != "" {
		return f.requests[endpoint]
	}
	n := 0
	for _, c := range f.requests {
		n += c
	}
	return n
}

// endpoint names a request's endpoint for the counts: its method and its
// path with the job, node or allocation ID replaced by <id>.
func endpoint(r *http.Request) string {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	switch {
	case len(parts) >= 2 && (parts[0] == "job" || parts[0] == "node"):
		parts[1] = "<id>"
	case len(parts) >= 3 && parts[0] == "client" && parts[1] == "allocation":
		parts[2] = "<id>"
	}
	return r.Method + " /v1/" + strings.Join(parts, "/")
}

func (f *fakeNomad) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests[endpoint(r)]++
	fault, stallEnd := f.fault, f.stallEnd
	f.mu.Unlock()
	if fault != nil {
		if status, stall := fault(r); stall {
			select {
			case <-r.Context().Done():
			case <-f.released:
			case <-stallEnd:
			}
			return
		} else if status != 0 {
			http.Error(w, fmt.Sprintf("injected fault %d", status), status)
			return
		}
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	parts := strings.Split(path, "/")
	switch {
	case path == "jobs" && r.Method == http.MethodGet:
		f.blocking(w, r, f.jobList)
	case path == "jobs" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		f.register(w, r)
	case path == "allocations":
		f.blocking(w, r, f.allocList)
	case path == "nodes":
		f.blocking(w, r, f.nodeList)
	case len(parts) == 2 && parts[0] == "node":
		f.reply(w, r, func() (any, bool) { n, ok := f.nodes[parts[1]]; return n, ok })
	case len(parts) == 2 && parts[0] == "job" && r.Method == http.MethodGet:
		f.reply(w, r, func() (any, bool) {
			if f.onInfo != nil {
				f.onInfo(parts[1])
			}
			j, ok := f.jobs[parts[1]]
			return j, ok
		})
	case len(parts) == 2 && parts[0] == "job" && r.Method == http.MethodDelete:
		f.reply(w, r, func() (any, bool) {
			j, ok := f.jobs[parts[1]]
			if ok {
				stopped := *j
				stopped.Stop, stopped.Status = new(true), new(jobStatusDead)
				f.jobs[parts[1]] = &stopped
				stopped.ModifyIndex = new(f.bump())
			}
			return &api.JobDeregisterResponse{EvalID: "e"}, ok
		})
	case len(parts) == 2 && parts[0] == "evaluation":
		f.reply(w, r, func() (any, bool) {
			f.evaluated = append(f.evaluated, parts[1])
			return &api.Evaluation{ID: parts[1], Status: api.EvalStatusComplete}, true
		})
	case len(parts) == 3 && parts[0] == "job" && parts[2] == "allocations":
		f.reply(w, r, func() (any, bool) {
			out := []*api.AllocationListStub{}
			for _, a := range f.allocs {
				if a.JobID == parts[1] {
					out = append(out, a)
				}
			}
			return out, true
		})
	case len(parts) == 3 && parts[0] == "job" && parts[2] == "evaluations":
		f.reply(w, r, func() (any, bool) { return append([]*api.Evaluation{}, f.evals[parts[1]]...), true })
	case len(parts) == 3 && parts[0] == "job" && parts[2] == "versions":
		f.reply(w, r, func() (any, bool) {
			v, ok := f.versions[parts[1]]
			return &api.JobVersionsResponse{Versions: v}, ok
		})
	case len(parts) == 4 && parts[0] == "client" && parts[3] == "signal":
		f.reply(w, r, func() (any, bool) {
			f.signals = append(f.signals, parts[2])
			return &api.GenericResponse{}, true
		})
	case len(parts) == 4 && parts[0] == "client" && parts[3] == "stats":
		f.reply(w, r, func() (any, bool) {
			return &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{}}, true
		})
	default:
		http.Error(w, "not served by the fake: "+r.Method+" "+r.URL.Path, http.StatusNotImplemented)
	}
}

// reply answers with what get returns under the lock, 404 when it finds
// nothing.
func (f *fakeNomad) reply(w http.ResponseWriter, _ *http.Request, get func() (any, bool)) {
	f.mu.Lock()
	out, ok := get()
	index := f.index
	body, err := json.Marshal(out)
	f.mu.Unlock()
	must.NoError(f.t, err)
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// blocking answers a list as Nomad's blocking queries do: at once without
// an index, else once Nomad's index passes it or the wait passes.
func (f *fakeNomad) blocking(w http.ResponseWriter, r *http.Request, list func() any) {
	min, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait, err := time.ParseDuration(r.URL.Query().Get("wait"))
	if err != nil || wait <= 0 {
		wait = 5 * time.Minute
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		f.mu.Lock()
		index, changed := f.index, f.changed
		f.mu.Unlock()
		if min == 0 || index > min {
			break
		}
		select {
		case <-changed:
		case <-timer.C:
			min = 0
		case <-r.Context().Done():
			return
		case <-f.released:
			return
		}
	}
	f.reply(w, r, func() (any, bool) { return list(), true })
}

func (f *fakeNomad) jobList() any {
	out := []*api.JobListStub{}
	for id, j := range f.jobs {
		if f.hidden[id] {
			continue
		}
		out = append(out, &api.JobListStub{
			ID: id, Name: id, Namespace: *j.Namespace, Type: *j.Type, ParentID: *j.ParentID, Status: *j.Status, Stop: *j.Stop,
			Meta: j.Meta, JobModifyIndex: *j.JobModifyIndex, ModifyIndex: *j.ModifyIndex, CreateIndex: *j.CreateIndex,
		})
	}
	slices.SortFunc(out, func(a, b *api.JobListStub) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (f *fakeNomad) allocList() any {
	out := []*api.AllocationListStub{}
	for _, a := range f.allocs {
		out = append(out, a)
	}
	return out
}

func (f *fakeNomad) nodeList() any {
	out := []*api.NodeListStub{}
	for _, n := range f.nodes {
		out = append(out, &api.NodeListStub{ID: n.ID, Name: n.Name, Datacenter: n.Datacenter, Status: n.Status,
			SchedulingEligibility: n.SchedulingEligibility, NodeResources: n.NodeResources, ModifyIndex: 1})
	}
	return out
}

// register stores a job the driver submits, checking the modify index it
// enforces as Nomad does.
func (f *fakeNomad) register(w http.ResponseWriter, r *http.Request) {
	var req api.JobRegisterRequest
	must.NoError(f.t, json.NewDecoder(r.Body).Decode(&req))
	f.mu.Lock()
	if req.EnforceIndex {
		have := uint64(0)
		if old := f.jobs[*req.Job.ID]; old != nil {
			have = *old.JobModifyIndex
		}
		if have != req.JobModifyIndex {
			f.mu.Unlock()
			http.Error(w, fmt.Sprintf("Enforcing job modify index %d: job exists with conflicting job modify index: %d", req.JobModifyIndex, have), http.StatusBadRequest)
			return
		}
	}
	idx := f.putJobLocked(req.Job)
	f.mu.Unlock()
	f.reply(w, r, func() (any, bool) { return &api.JobRegisterResponse{EvalID: "e", JobModifyIndex: idx}, true })
}

// declaredFixture is jobspec's resnet50 Nomad job, a user's job whose
// groups carry a caravan policy, as Nomad's API returns it.
func declaredFixture(t *testing.T) *api.Job {
	src, err := os.ReadFile("../../jobspec/testdata/nomad/api/resnet50.json")
	must.NoError(t, err)
	var req struct{ Job *api.Job }
	must.NoError(t, json.Unmarshal(src, &req))
	return req.Job
}
