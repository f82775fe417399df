package nomad

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// The tests of this file run the driver against a fake Nomad (fakeNomad)
// that fails, stalls, and races the driver's reads, as a Nomad cluster
// under load or in an election does.

// testHost is the driver's host: the test plays the trainers' part by
// setting the last sample, and reads the events.
type testHost struct {
	mu     sync.Mutex
	sample structs.Sample
	events []*structs.Event
}

func (h *testHost) LastSample(structs.JobKey) (structs.Sample, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sample, h.sample.Step > 0
}

func (h *testHost) Event(_ context.Context, ev *structs.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	return nil
}

func (h *testHost) JobReportToken(structs.JobKey) string { return "" }

func (h *testHost) report(s structs.Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sample = s
}

// eventsOf returns the messages of the events of a type.
func (h *testHost) eventsOf(typ string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		if ev.Type == typ {
			out = append(out, ev.Message)
		}
	}
	return out
}

// startDriver starts a driver of cfg on the fake Nomad; it stops when the
// test ends, before the fake.
func startDriver(t *testing.T, f *fakeNomad, cfg Config) *Driver {
	t.Helper()
	cfg.Address = f.srv.URL
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Info})
	}
	d, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(d.Stop)
	return d
}

// testWriter sends the driver's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// declaredAt waits until the driver's declarations were read from Nomad's
// index at least, and returns them.
func declaredAt(t *testing.T, d *Driver, index uint64) map[structs.JobKey]*structs.Declaration {
	t.Helper()
	var decls map[structs.JobKey]*structs.Declaration
	agent.WaitFor(t, 10*time.Second, fmt.Sprintf("declarations at index %d", index), func() error {
		var at uint64
		var err error
		decls, at, err = d.Declared(context.Background())
		if err != nil {
			return err
		}
		if at < index {
			return fmt.Errorf("declarations at index %d", at)
		}
		return nil
	})
	return decls
}

var resnetKey = structs.JobKey{Namespace: "default", ID: "resnet50"}

// isJobRead matches the reads of the resnet50 Nomad job.
func isJobRead(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/v1/job/resnet50"
}

// TestDeclared_ReadFailureKeepsDeclaration reads a declared job whose
// user runs a new version while Nomad answers its reads with 500: the
// job keeps its declaration (the leader would stop it otherwise, as
// purged from the cluster), and the new version is declared once Nomad
// answers again.
func TestDeclared_ReadFailureKeepsDeclaration(t *testing.T) {
	f := newFakeNomad(t)
	first := f.putJob(declaredFixture(t))
	d := startDriver(t, f, Config{})
	decls := declaredAt(t, d, first)
	must.NotNil(t, decls[resnetKey])
	must.Eq(t, structs.DeclaredJob, decls[resnetKey].Kind)
	must.Eq(t, first, decls[resnetKey].Index)

	f.setFault(func(r *http.Request) (int, bool) {
		if isJobRead(r) {
			return http.StatusInternalServerError, false
		}
		return 0, false
	})
	rerun := declaredFixture(t)
	rerun.Meta["team"] = "speech"
	second := f.putJob(rerun)
	decls = declaredAt(t, d, second)
	must.NotNil(t, decls[resnetKey], must.Sprint("a job whose read failed was dropped from the declarations"))
	must.Eq(t, structs.DeclaredJob, decls[resnetKey].Kind)
	must.Eq(t, first, decls[resnetKey].Index, must.Sprint("the previous declaration stands"))
	failed := f.count("GET /v1/job/<id>")

	f.setFault(nil)
	agent.WaitFor(t, 10*time.Second, "the new version declared", func() error {
		decls, _, err := d.Declared(context.Background())
		if err != nil {
			return err
		}
		if decl := decls[resnetKey]; decl == nil || decl.Index != second {
			return fmt.Errorf("declaration: %+v", decl)
		}
		return nil
	})
	decls, _, err := d.Declared(context.Background())
	must.NoError(t, err)
	must.Eq(t, "speech", decls[resnetKey].Job.Meta["team"])
	must.Greater(t, failed, f.count("GET /v1/job/<id>"), must.Sprint("read again without a new list"))
}

// TestDeclared_ChangedBetweenListAndRead runs a second version of a
// declared job between the driver's list and its read: the job keeps
// its previous declaration, and is read again at the next list.
func TestDeclared_ChangedBetweenListAndRead(t *testing.T) {
	f := newFakeNomad(t)
	first := f.putJob(declaredFixture(t))
	d := startDriver(t, f, Config{})
	must.Eq(t, first, declaredAt(t, d, first)[resnetKey].Index)

	var raced uint64
	f.mu.Lock()
	f.onInfo = func(id string) {
		if id != "resnet50" || raced != 0 {
			return
		}
		again := declaredFixture(t)
		again.Meta["team"] = "raced"
		raced = f.putJobLocked(again)
		// The lists after the race wait until the test looked.
		f.fault = func(r *http.Request) (int, bool) {
			return 0, r.Method == http.MethodGet && r.URL.Path == "/v1/jobs"
		}
	}
	f.mu.Unlock()
	rerun := declaredFixture(t)
	rerun.Meta["team"] = "speech"
	second := f.putJob(rerun)
	decls := declaredAt(t, d, second)
	must.NotNil(t, decls[resnetKey], must.Sprint("a job changed between the list and the read was dropped from the declarations"))
	must.Eq(t, first, decls[resnetKey].Index, must.Sprint("the previous declaration stands"))

	f.setFault(nil)
	agent.WaitFor(t, 10*time.Second, "the raced version declared", func() error {
		decls, _, err := d.Declared(context.Background())
		if err != nil {
			return err
		}
		if decl := decls[resnetKey]; decl == nil || decl.Index != raced {
			return fmt.Errorf("declaration: %+v (raced at %d)", decl, raced)
		}
		return nil
	})
	decls, _, err := d.Declared(context.Background())
	must.NoError(t, err)
	must.Eq(t, "raced", decls[resnetKey].Job.Meta["team"])
}

// TestDeclared_AbsentUntilNotFound leaves a declared job out of Nomad's
// list while Nomad still has it: the job keeps its declaration, on every
// list, until Nomad answers 404 for its ID.
func TestDeclared_AbsentUntilNotFound(t *testing.T) {
	f := newFakeNomad(t)
	first := f.putJob(declaredFixture(t))
	d := startDriver(t, f, Config{})
	must.NotNil(t, declaredAt(t, d, first)[resnetKey])

	hidden := f.hide("resnet50", true)
	decls := declaredAt(t, d, hidden)
	must.NotNil(t, decls[resnetKey], must.Sprint("a job absent from one list was dropped while Nomad has it"))
	must.Eq(t, first, decls[resnetKey].Index)
	decls = declaredAt(t, d, f.touch())
	must.NotNil(t, decls[resnetKey], must.Sprint("a job absent from two lists was dropped while Nomad has it"))

	f.purge("resnet50")
	agent.WaitFor(t, 10*time.Second, "the purged job gone", func() error {
		decls, _, err := d.Declared(context.Background())
		if err != nil {
			return err
		}
		if decls[resnetKey] != nil {
			return fmt.Errorf("still declared: %+v", decls[resnetKey])
		}
		return nil
	})
}

// shJob is a Caravan job of shell tasks that checkpoint within 5s.
func shJob(t *testing.T, id string) *structs.Job {
	src := fmt.Sprintf(`
job %q {
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = 1
      max = 4
    }
    parameter_servers {
      min = 1
      max = 1
    }
    checkpoint {
      timeout = "5s"
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = "/bin/sh"
    }
    resources {
      cpu    = 50
      memory = 32
    }
  }
}
`, id)
	job, diags := jobspec.Parse(&jobspec.Config{Filename: id + ".hcl", Src: []byte(src)})
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	job.Canonicalize()
	must.NoError(t, job.Validate())
	return job
}

// placementOn places a job's ps and workers on node n1.
func placementOn(job *structs.Job, ps, workers int) *structs.Placement {
	return &structs.Placement{Namespace: job.Namespace, JobID: job.ID, NumPS: ps, NumWorkers: workers,
		Nodes: []*structs.NodeTasks{{NodeID: "n1", PS: ps, Workers: workers}}}
}

// waitReport polls Status until the report of job id satisfies ok, and
// returns it.
func waitReport(t *testing.T, d *Driver, id, what string, ok func(r *structs.JobReport) bool) *structs.JobReport {
	t.Helper()
	var got *structs.JobReport
	agent.WaitFor(t, 10*time.Second, what, func() error {
		reports, err := d.Status(context.Background())
		if err != nil {
			return err
		}
		if got = reportOf(reports, id); got == nil || !ok(got) {
			return fmt.Errorf("report: %+v", got)
		}
		return nil
	})
	return got
}

// reportOf returns a job's report among reports, nil when there is none.
func reportOf(reports []*structs.JobReport, id string) *structs.JobReport {
	for _, r := range reports {
		if r.JobID == id {
			return r
		}
	}
	return nil
}

// runJobs enacts a plan of n jobs of one ps and one worker each, makes
// the fake run their allocations, and waits until Status reports them
// all running.
func runJobs(t *testing.T, f *fakeNomad, d *Driver, n int) (*structs.Plan, []*structs.Job) {
	t.Helper()
	plan := &structs.Plan{Index: 1}
	var jobs []*structs.Job
	for i := range n {
		job := shJob(t, fmt.Sprintf("sh-%d", i))
		jobs = append(jobs, job)
		plan.Placements = append(plan.Placements, placementOn(job, 1, 1))
	}
	reports, err := d.Enact(context.Background(), plan, jobs)
	must.NoError(t, err)
	must.SliceLen(t, n, reports)
	agent.WaitFor(t, 30*time.Second, fmt.Sprintf("%d jobs submitted", n), func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.jobs) != n {
			return fmt.Errorf("%d jobs submitted", len(f.jobs))
		}
		return nil
	})
	for _, job := range jobs {
		f.runAll(JobPrefix + job.ID)
	}
	agent.WaitFor(t, 30*time.Second, fmt.Sprintf("%d jobs running", n), func() error {
		reports, err := d.Status(context.Background())
		if err != nil {
			return err
		}
		running := 0
		for _, r := range reports {
			if r.Placement != nil && r.Placement.NumWorkers == 1 && r.Change != nil && r.Change.Phase == structs.ChangeDone {
				running++
			}
		}
		if running != n {
			return fmt.Errorf("%d of %d jobs running", running, n)
		}
		return nil
	})
	return plan, jobs
}

// returnsWithin runs call and fails the test when it does not return
// within bound: a call that waits on a stalled Nomad never does. A call
// still running when the test fails ends when the fake releases it.
func returnsWithin(t *testing.T, bound time.Duration, name string, call func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case err := <-done:
		must.NoError(t, err, must.Sprint(name))
	case <-timer.C:
		t.Fatalf("%s waited on a stalled Nomad for more than %s", name, bound)
	}
}

// TestDriver_StalledNomad stalls every request to Nomad once the driver
// has read its views: Status, Enact (a rescale), Nodes and Declared
// answer from what was read, at once, and the rescale waits for its
// worker.
func TestDriver_StalledNomad(t *testing.T) {
	f := newFakeNomad(t)
	host := &testHost{}
	d := startDriver(t, f, Config{Host: host})
	plan, jobs := runJobs(t, f, d, 1)
	_, err := d.Nodes(context.Background())
	must.NoError(t, err)
	declaredAt(t, d, 1)

	f.setFault(func(*http.Request) (int, bool) { return 0, true })
	const bound = 250 * time.Millisecond
	ctx := context.Background()
	returnsWithin(t, bound, "Status", func() error {
		_, err := d.Status(ctx)
		return err
	})
	rescale := &structs.Plan{Index: 2, Placements: []*structs.Placement{placementOn(jobs[0], 1, 3)}}
	returnsWithin(t, bound, "Enact", func() error {
		reports, err := d.Enact(ctx, rescale, jobs)
		if err == nil && (len(reports) != 1 || reports[0].Change == nil || reports[0].Change.Phase != structs.ChangeCheckpointing) {
			err = fmt.Errorf("reports: %+v", reports)
		}
		return err
	})
	returnsWithin(t, bound, "Status with a rescale in flight", func() error {
		reports, err := d.Status(ctx)
		if r := reportOf(reports, "sh-0"); err == nil && (r == nil || r.Placement.NumWorkers != 1) {
			err = fmt.Errorf("report: %+v", r)
		}
		return err
	})
	returnsWithin(t, bound, "Nodes", func() error {
		nodes, err := d.Nodes(ctx)
		if err == nil && len(nodes) != 1 {
			err = fmt.Errorf("nodes: %+v", nodes)
		}
		return err
	})
	returnsWithin(t, bound, "Declared", func() error {
		_, _, err := d.Declared(ctx)
		return err
	})
	returnsWithin(t, bound, "Enact of the plan in force", func() error {
		_, err := d.Enact(ctx, plan, jobs)
		return err
	})
}

// TestStatus_CallsNomadForNothing runs 200 jobs and polls Status as the
// leader does while a change is in flight: no poll reads a job or its
// allocations from Nomad.
func TestStatus_CallsNomadForNothing(t *testing.T) {
	f := newFakeNomad(t)
	d := startDriver(t, f, Config{Host: &testHost{}, UsageInterval: time.Hour})
	runJobs(t, f, d, 200)

	reads, perJob, total := f.count("GET /v1/job/<id>"), f.count("GET /v1/job/<id>/allocations"), f.count("")
	for range 100 {
		reports, err := d.Status(context.Background())
		must.NoError(t, err)
		must.SliceLen(t, 200, reports)
	}
	must.Eq(t, reads, f.count("GET /v1/job/<id>"), must.Sprint("Status read jobs from Nomad"))
	must.Eq(t, perJob, f.count("GET /v1/job/<id>/allocations"), must.Sprint("Status read allocations from Nomad"))
	// Only a watcher's blocking query may have come back meanwhile.
	must.LessEq(t, total+3, f.count(""), must.Sprint("requests during 100 polls of Status"))
}

// TestEnact_RegisterFails answers the submission of a new job with 500:
// Enact returns at once with the change starting, and the change is
// aborted, with Nomad's answer, once the worker's call failed.
func TestEnact_RegisterFails(t *testing.T) {
	f := newFakeNomad(t)
	host := &testHost{}
	d := startDriver(t, f, Config{Host: host})
	f.setFault(func(r *http.Request) (int, bool) {
		if r.URL.Path == "/v1/jobs" && r.Method != http.MethodGet {
			return http.StatusInternalServerError, false
		}
		return 0, false
	})
	job := shJob(t, "sh")
	reports, err := d.Enact(context.Background(), &structs.Plan{Index: 1, Placements: []*structs.Placement{placementOn(job, 1, 2)}}, []*structs.Job{job})
	must.NoError(t, err, must.Sprint("Enact waits for no submission"))
	must.SliceLen(t, 1, reports)
	must.True(t, reports[0].Change.InFlight())

	var aborted *structs.JobReport
	agent.WaitFor(t, 10*time.Second, "the change aborted", func() error {
		reports, err := d.Status(context.Background())
		if err != nil {
			return err
		}
		if r := reportOf(reports, "sh"); r != nil && r.Change != nil && r.Change.Phase == structs.ChangeAborted {
			aborted = r
			return nil
		}
		return fmt.Errorf("reports: %+v", reports)
	})
	must.StrContains(t, aborted.Change.Message, "submit Nomad job caravan-sh")
	must.StrContains(t, aborted.Change.Message, "500")
	must.SliceLen(t, 1, host.eventsOf(structs.EventRescaleAborted))
	must.Eq(t, 1, f.count("PUT /v1/jobs"), must.Sprint("one submission, not retried within the abort backoff"))
}

// TestEnact_RescaleThroughWorkers rescales a running job: Enact returns
// with the change checkpointing, the worker signals the tasks, and the
// next generation is submitted only once a sample confirms a newer
// checkpoint; the change is done when its tasks run.
func TestEnact_RescaleThroughWorkers(t *testing.T) {
	f := newFakeNomad(t)
	host := &testHost{}
	d := startDriver(t, f, Config{Host: host})
	_, jobs := runJobs(t, f, d, 1)
	ctx := context.Background()
	host.report(structs.Sample{JobID: "sh-0", Step: 10, CheckpointStep: 5})

	rescale := &structs.Plan{Index: 2, Placements: []*structs.Placement{placementOn(jobs[0], 1, 3)}}
	reports, err := d.Enact(ctx, rescale, jobs)
	must.NoError(t, err)
	must.Eq(t, structs.ChangeCheckpointing, reports[0].Change.Phase)
	status := func(what string, ok func(r *structs.JobReport) bool) *structs.JobReport {
		return waitReport(t, d, "sh-0", what, ok)
	}
	r := status("the checkpoint signal sent", func(r *structs.JobReport) bool {
		return len(host.eventsOf(structs.EventCheckpointRequested)) == 1
	})
	must.Eq(t, structs.ChangeCheckpointing, r.Change.Phase)
	must.Eq(t, "waiting for a checkpoint newer than step 5", r.Change.Message)
	f.mu.Lock()
	must.SliceLen(t, 2, f.signals, must.Sprint("the ps and the worker signalled"))
	must.SliceLen(t, 1, f.versions["caravan-sh-0"], must.Sprint("nothing submitted before the checkpoint"))
	f.mu.Unlock()

	host.report(structs.Sample{JobID: "sh-0", Step: 12, CheckpointStep: 12})
	status("the next generation submitted", func(r *structs.JobReport) bool {
		return r.Change.Phase == structs.ChangeStarting
	})
	f.mu.Lock()
	must.Eq(t, "2", f.jobs["caravan-sh-0"].Meta[metaGeneration])
	f.mu.Unlock()
	f.runAll("caravan-sh-0")
	r = status("the change done", func(r *structs.JobReport) bool { return r.Change.Phase == structs.ChangeDone })
	must.Eq(t, 3, r.Placement.NumWorkers)
	must.SliceLen(t, 1, host.eventsOf(structs.EventCheckpointConfirmed))
	must.SliceLen(t, 2, host.eventsOf(structs.EventTasksRunning), must.Sprint("the start, then the rescale"))
}

// TestDriver_IdleRequests counts the requests to Nomad of a driver that
// runs 200 idle jobs, polled by a leader four times a second: the three
// blocking queries coming back every WaitTime, and the stats calls at
// UsageRate, whatever the number of jobs.
func TestDriver_IdleRequests(t *testing.T) {
	f := newFakeNomad(t)
	const wait = time.Second
	d := startDriver(t, f, Config{Host: &testHost{}, WaitTime: wait, UsageInterval: time.Second})
	runJobs(t, f, d, 200)

	f.mu.Lock()
	before := maps.Clone(f.requests)
	f.mu.Unlock()
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for range 16 {
		<-tick.C
		_, err := d.Status(context.Background())
		must.NoError(t, err)
	}
	elapsed := time.Since(start).Seconds()
	f.mu.Lock()
	total := 0
	for ep, n := range f.requests {
		if n -= before[ep]; n > 0 {
			t.Logf("%s: %d requests, %.1f a second", ep, n, float64(n)/elapsed)
			total += n
		}
	}
	f.mu.Unlock()
	rate := float64(total) / elapsed
	t.Logf("200 idle jobs: %d requests in %.1fs, %.1f a second", total, elapsed, rate)
	bound := 3/wait.Seconds() + d.cfg.UsageRate
	must.LessEq(t, (bound+1)*elapsed+3, float64(total), must.Sprintf("%.1f requests a second", rate))
	must.Positive(t, f.count("GET /v1/client/allocation/<id>/stats")-before["GET /v1/client/allocation/<id>/stats"],
		must.Sprint("the stats are read"))
}

// TestEnact_RenamedJobTakesOver rescales a job of namespace team whose
// Nomad job, in the Nomad namespace all of Caravan's share, runs under
// the name an earlier version gave it, caravan-sh: the next generation
// is submitted as caravan-team~sh (NomadJobID), the old one is stopped,
// and the driver follows the new one.
func TestEnact_RenamedJobTakesOver(t *testing.T) {
	f := newFakeNomad(t)
	host := &testHost{}
	d := startDriver(t, f, Config{Host: host, Namespace: "shared"})
	ctx := context.Background()
	job := shJob(t, "sh")
	job.Namespace = "team"
	old, err := Translate(job, placementOn(job, 1, 1), Submission{Namespace: "shared", Generation: 1})
	must.NoError(t, err)
	must.Eq(t, "caravan-team~sh", *old.ID)
	old.ID, old.Name = new("caravan-sh"), new("caravan-sh")
	f.putJob(old)
	f.runAll("caravan-sh")

	status := func(what string, ok func(r *structs.JobReport) bool) *structs.JobReport {
		return waitReport(t, d, "sh", what, ok)
	}
	status("the job seen running under its old name", func(r *structs.JobReport) bool {
		return r.Placement != nil && r.Placement.NumWorkers == 1
	})
	host.report(structs.Sample{Namespace: "team", JobID: "sh", Step: 10, CheckpointStep: 5})
	plan := &structs.Plan{Index: 2, Placements: []*structs.Placement{placementOn(job, 1, 2)}}
	_, err = d.Enact(ctx, plan, []*structs.Job{job})
	must.NoError(t, err)
	status("the checkpoint signal sent", func(*structs.JobReport) bool {
		return len(host.eventsOf(structs.EventCheckpointRequested)) == 1
	})
	host.report(structs.Sample{Namespace: "team", JobID: "sh", Step: 12, CheckpointStep: 12})
	status("the next generation submitted", func(r *structs.JobReport) bool { return r.Change.Phase == structs.ChangeStarting })
	agent.WaitFor(t, 10*time.Second, "the old name stopped", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !*f.jobs["caravan-sh"].Stop {
			return fmt.Errorf("caravan-sh still runs")
		}
		return nil
	})
	f.mu.Lock()
	must.Eq(t, "2", f.jobs["caravan-team~sh"].Meta[metaGeneration])
	f.mu.Unlock()
	f.runAll("caravan-team~sh")
	r := status("the change done", func(r *structs.JobReport) bool { return r.Change.Phase == structs.ChangeDone })
	must.Eq(t, 2, r.Placement.NumWorkers)
}

// TestStatus_StopsLingeringJobAgain stops a job whose allocations Nomad
// leaves to run (the fake's stop does not touch them, as Nomad v1.11.0's
// leaves all groups but one: see zero): Status stops the Nomad job again,
// through a version at count 0, lingerGrace after it first saw them live,
// again after each further lingerGrace, and forgets the job once none is
// live.
func TestStatus_StopsLingeringJobAgain(t *testing.T) {
	f := newFakeNomad(t)
	d := startDriver(t, f, Config{})
	runJobs(t, f, d, 1)
	key := structs.JobKey{Namespace: "default", ID: "sh-0"}
	now := time.Now()
	d.now = func() time.Time { return now }
	status := func() {
		t.Helper()
		_, err := d.Status(context.Background())
		must.NoError(t, err)
	}
	stops := func(n int) {
		t.Helper()
		agent.WaitFor(t, 10*time.Second, fmt.Sprintf("%d stops of the Nomad job", n), func() error {
			if got := f.count("DELETE /v1/job/<id>"); got != n {
				return fmt.Errorf("%d stops", got)
			}
			return nil
		})
	}
	lingering := func() (time.Time, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		at, ok := d.lingering[key]
		return at, ok
	}

	_, err := d.Enact(context.Background(), &structs.Plan{Index: 2}, nil)
	must.NoError(t, err)
	stops(1)
	agent.WaitFor(t, 10*time.Second, "the job listed as stopped", func() error {
		if nj := d.jobsView().caravan[key]; nj == nil || nj.running() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	status()
	first, ok := lingering()
	must.True(t, ok, must.Sprint("live allocations of a stopped job not noticed"))
	must.Eq(t, now, first)

	now = now.Add(lingerGrace - time.Second)
	status()
	at, _ := lingering()
	must.Eq(t, first, at, must.Sprint("stopped again before lingerGrace"))

	now = now.Add(time.Second)
	status()
	stops(2)
	at, _ = lingering()
	must.Eq(t, now, at)
	f.mu.Lock()
	versions := f.versions[JobPrefix+key.ID]
	must.SliceLen(t, 3, versions, must.Sprint("the start, the drain, the second stop's version at count 0"))
	for _, tg := range versions[0].TaskGroups {
		must.Eq(t, 0, *tg.Count, must.Sprintf("group %s of the second stop's version", *tg.Name))
	}
	must.SliceLen(t, 2, f.evaluated, must.Sprint("each count-0 version's evaluation awaited"))
	must.True(t, *f.jobs[JobPrefix+key.ID].Stop, must.Sprint("stopped after the version at count 0"))
	f.mu.Unlock()

	f.endAll(JobPrefix + key.ID)
	agent.WaitFor(t, 10*time.Second, "the allocations listed as ended", func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if live := liveCount(d.allocs.byJob[namespacedID{Namespace: "default", ID: JobPrefix + key.ID}]); live > 0 {
			return fmt.Errorf("%d live", live)
		}
		return nil
	})
	now = now.Add(lingerGrace)
	status()
	_, ok = lingering()
	must.False(t, ok, must.Sprint("a job whose allocations ended is still lingering"))
	must.Eq(t, 2, f.count("DELETE /v1/job/<id>"))
}

// TestEnact_DrainedVersionNeedsNoCheckpoint plans a job again while its
// Nomad job is at the version drain wrote (every group at count 0, not
// stopped yet): its tasks are stopping, so the change submits without
// asking them for a checkpoint.
func TestEnact_DrainedVersionNeedsNoCheckpoint(t *testing.T) {
	f := newFakeNomad(t)
	host := &testHost{}
	d := startDriver(t, f, Config{Host: host})
	plan, jobs := runJobs(t, f, d, 1)
	host.report(structs.Sample{JobID: "sh-0", Step: 10, CheckpointStep: 5})

	f.mu.Lock()
	drained := *f.jobs["caravan-sh-0"]
	drained.Meta = maps.Clone(drained.Meta)
	drained.Meta[metaPlacement] = metaPlacementDrained
	drained.TaskGroups = nil
	for _, tg := range f.jobs["caravan-sh-0"].TaskGroups {
		c := *tg
		c.Count = new(0)
		drained.TaskGroups = append(drained.TaskGroups, &c)
	}
	index := f.putJobLocked(&drained)
	f.mu.Unlock()
	agent.WaitFor(t, 10*time.Second, "the drained version listed", func() error {
		if at := d.jobsView().listIndex; at < index {
			return fmt.Errorf("list at index %d", at)
		}
		return nil
	})

	again := &structs.Plan{Index: 2, Placements: plan.Placements}
	reports, err := d.Enact(context.Background(), again, jobs)
	must.NoError(t, err)
	must.Eq(t, structs.ChangeStarting, reports[0].Change.Phase)
	f.mu.Lock()
	must.SliceEmpty(t, f.signals, must.Sprint("stopping tasks asked for a checkpoint"))
	f.mu.Unlock()
}
