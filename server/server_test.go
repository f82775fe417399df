package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// simDriver returns a running simulated cluster of 4 × 4 GPUs at speed.
func simDriver(t testing.TB, speed float64) *sim.Driver {
	cluster := sim.DefaultConfig()
	cluster.Nodes, cluster.GPUsPerNode = 4, 4
	d := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Speed: speed})
	d.Start()
	t.Cleanup(d.Stop)
	return d
}

func client(t *testing.T, s *Server) *api.Client {
	c, err := api.NewClient(&api.Config{Address: s.HTTPAddr()})
	must.NoError(t, err)
	return c
}

// errOf is the error of an answer, without its metadata.
func errOf[M any](_ M, err error) error { return err }

// recode re-decodes v as a T: an API answer as the server's type, to
// compare with the state or for structs' methods, or a server value as the
// API's. The two encode alike (package api's tests check it).
func recode[T any](t testing.TB, v any) T {
	t.Helper()
	b, err := json.Marshal(v)
	must.NoError(t, err)
	var out T
	must.NoError(t, json.Unmarshal(b, &out))
	return out
}

func demoJob(t *testing.T, id string) *api.JobRegisterRequest {
	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	hcl := strings.Replace(string(src), `job "demo"`, fmt.Sprintf("job %q", id), 1)
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: "demo.hcl"}
}

// leaderOf waits for one of servers to lead and returns it.
func leaderOf(t testing.TB, servers ...*Server) *Server {
	var leader *Server
	agent.WaitFor(t, 10*time.Second, "a leader that recorded its version", func() error {
		for _, s := range servers {
			if !s.IsLeader() {
				continue
			}
			// Until it has, entries gated on a version are refused as
			// during an upgrade.
			members, err := state.Members(s.State().Txn(), nil)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(members, func(m *structs.Member) bool { return m.ID == s.cfg.NodeID && m.Version != "" }) {
				return fmt.Errorf("leader %s has not recorded its version", s.cfg.NodeID)
			}
			leader = s
			return nil
		}
		return errors.New("no server leads")
	})
	return leader
}

func jobStatus(t *testing.T, c *api.Client, id string, want string) func() error {
	return func() error {
		job, _, err := c.Jobs().Info(id, nil)
		if err != nil {
			return err
		}
		if job.Status != want {
			return fmt.Errorf("job %s is %s, want %s", id, job.Status, want)
		}
		return nil
	}
}

func TestServer_RunsJobToCompletion(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 500)))
	leaderOf(t, s)
	c := client(t, s)
	resp, _, err := c.Jobs().Register(demoJob(t, "demo-1"), nil)
	must.NoError(t, err)
	must.Eq(t, "demo-1", resp.JobID)
	must.Eq(t, 0, resp.Version)

	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "demo-1", structs.JobStatusRunning))
	hist, _, err := c.Jobs().History("demo-1", nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, hist)
	must.Positive(t, hist[0].Placement.NumWorkers)

	agent.WaitFor(t, 60*time.Second, "job complete", jobStatus(t, c, "demo-1", structs.JobStatusComplete))
	sum, _, err := c.Jobs().Summary("demo-1", nil)
	must.NoError(t, err)
	must.Positive(t, sum.Samples)
	must.NotNil(t, sum.Model)
	must.SliceNotEmpty(t, sum.Model.Speed, must.Sprint("the speed model was fitted from samples"))

	events, _, err := c.Events("demo-1", nil)
	must.NoError(t, err)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	must.SliceContains(t, types, structs.EventJobRegistered)
	must.SliceContains(t, types, structs.EventJobPlaced)
	must.SliceContains(t, types, structs.EventJobCompleted)
}

// cluster starts n servers that find each other through retry_join.
func cluster(t testing.TB, n int, driver Driver) []*Server {
	var addrs []string
	for _, port := range agent.FreePorts(t, n) {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	var servers []*Server
	for i := range n {
		cfg := TestConfig(t, driver)
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.HTTPAddr = addrs[i]
		cfg.BootstrapExpect = n
		cfg.RetryJoin = addrs
		servers = append(servers, TestServer(t, cfg))
	}
	return servers
}

func TestCluster_FailoverLosesNothing(t *testing.T) {
	servers := cluster(t, 3, simDriver(t, 50))
	leader := leaderOf(t, servers...)
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
		}
	}

	// Writes to a follower are forwarded to the leader.
	fc := client(t, follower)
	agent.WaitFor(t, 10*time.Second, "forwarding to the leader", func() error {
		_, _, err := fc.Jobs().Register(demoJob(t, "a"), nil)
		return err
	})
	_, _, err := fc.Jobs().Register(demoJob(t, "b"), nil)
	must.NoError(t, err)
	for _, s := range servers {
		agent.WaitFor(t, 20*time.Second, "plan replicated", func() error {
			plan, err := state.LatestPlan(s.State().Txn(), nil)
			if err != nil || plan == nil || len(plan.Placements) < 2 {
				return fmt.Errorf("no plan of both jobs on %s yet (%v)", s.ID(), err)
			}
			smp, err := state.Samples(s.State().Txn(), nil, structs.DefaultNamespace, "a")
			if err != nil || smp == nil || len(smp.Samples) == 0 {
				return fmt.Errorf("no samples on %s yet", s.ID())
			}
			return nil
		})
	}
	before := leader.State().Txn()
	jobs, err := state.Jobs(before, nil, "")
	must.NoError(t, err)
	plan, err := state.LatestPlan(before, nil)
	must.NoError(t, err)
	samples, err := state.Samples(before, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)

	// Kill the leader: another is elected and has everything.
	start := time.Now()
	must.NoError(t, leader.Shutdown())
	var rest []*Server
	for _, s := range servers {
		if s != leader {
			rest = append(rest, s)
		}
	}
	next := leaderOf(t, rest...)
	t.Logf("failover took %v", time.Since(start))

	txn := next.State().Txn()
	after, err := state.Jobs(txn, nil, "")
	must.NoError(t, err)
	must.Eq(t, len(jobs), len(after))
	for i := range jobs {
		must.Eq(t, jobs[i].ID, after[i].ID)
		must.Eq(t, jobs[i].Version, after[i].Version)
	}
	plan2, err := state.LatestPlan(txn, nil)
	must.NoError(t, err)
	must.GreaterEq(t, plan.Index, plan2.Index)
	samples2, err := state.Samples(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.GreaterEq(t, samples.Received, samples2.Received)

	// Planning resumes under the new leader.
	nc := client(t, next)
	_, _, err = nc.Jobs().Register(demoJob(t, "c"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "new job placed by the new leader", jobStatus(t, nc, "c", structs.JobStatusRunning))
}

// TestLeader_DriverOutage makes the cluster unreachable: the outage and
// the recovery are each one event, jobs registered meanwhile are kept, and
// the leader catches up when the cluster returns.
func TestLeader_DriverOutage(t *testing.T) {
	d := &TestOutageDriver{Driver: simDriver(t, 50)}
	s := TestServer(t, TestConfig(t, d))
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "before"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "before", structs.JobStatusRunning))

	d.Down.Store(true)
	_, _, err = c.Jobs().Register(demoJob(t, "during"), nil)
	must.NoError(t, err)
	countEvents := func(typ string) int {
		evs, _, err := c.Events("", nil)
		must.NoError(t, err)
		n := 0
		for _, ev := range evs {
			if ev.Type == typ {
				n++
			}
		}
		return n
	}
	agent.WaitFor(t, 10*time.Second, "DriverError event", func() error {
		if countEvents(structs.EventDriverError) == 0 {
			return errors.New("no DriverError event yet")
		}
		return nil
	})
	// Meanwhile the state is kept as it was.
	must.NoError(t, jobStatus(t, c, "during", structs.JobStatusPending)())
	must.NoError(t, jobStatus(t, c, "before", structs.JobStatusRunning)())

	d.Down.Store(false)
	agent.WaitFor(t, 20*time.Second, "second job placed", jobStatus(t, c, "during", structs.JobStatusRunning))
	must.Eq(t, 1, countEvents(structs.EventDriverError))
	must.Eq(t, 1, countEvents(structs.EventDriverRecovered))
}

// overlappingSource hands out the same samples more than once, as
// collectors read again from their start after a failover do.
type overlappingSource struct {
	ready atomic.Bool // set once the job is registered
	mu    sync.Mutex
	calls int
}

func (o *overlappingSource) Samples(_ context.Context, cursor uint64) ([]structs.Sample, uint64, error) {
	if !o.ready.Load() {
		return nil, cursor, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	smp := func(step int64) structs.Sample {
		return structs.Sample{JobID: "dedup", Step: step, Loss: 1 / float64(step), StepTimeS: 0.1, NumPS: 1, NumWorkers: 1, Time: step * 1e9}
	}
	if o.calls == 1 {
		return []structs.Sample{smp(1), smp(2), smp(3)}, 1, nil
	}
	return []structs.Sample{smp(2), smp(3), smp(4)}, 2, nil
}

// TestLeader_DropsRepeatedSamples commits each sample of a job once though
// the source repeats them.
func TestLeader_DropsRepeatedSamples(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	src := &overlappingSource{}
	cfg.Metrics = src
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "dedup"), nil)
	must.NoError(t, err)
	// Placed, so the leader's scheduler knows the job.
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "dedup", structs.JobStatusRunning))
	src.ready.Store(true)
	var steps []int64
	agent.WaitFor(t, 10*time.Second, "4 samples committed", func() error {
		js, err := state.Samples(s.State().Txn(), nil, structs.DefaultNamespace, "dedup")
		if err != nil || js == nil {
			return fmt.Errorf("no samples yet (%v)", err)
		}
		steps = nil
		for _, smp := range js.Samples {
			steps = append(steps, smp.Step)
		}
		if len(steps) < 4 {
			return fmt.Errorf("steps so far %v", steps)
		}
		return nil
	})
	must.Eq(t, []int64{1, 2, 3, 4}, steps)
}

// TestCluster_LeaveAndRejoin stops a server gracefully, which removes it
// from the Raft configuration, and starts it again on its data dir (and a
// new Raft port): it asks to join again and is a voter once more.
func TestCluster_LeaveAndRejoin(t *testing.T) {
	var addrs []string
	for _, port := range agent.FreePorts(t, 3) {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	driver := simDriver(t, 50)
	var cfgs []Config
	var servers []*Server
	for i := range 3 {
		cfg := TestConfig(t, driver)
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.HTTPAddr, cfg.BootstrapExpect, cfg.RetryJoin = addrs[i], 3, addrs
		cfgs = append(cfgs, cfg)
		servers = append(servers, TestServer(t, cfg))
	}
	leader := leaderOf(t, servers...)
	i := slices.IndexFunc(servers, func(s *Server) bool { return s != leader })
	id := servers[i].ID()
	voters := func(want int, with bool) func() error {
		return func() error {
			f := leader.raft.GetConfiguration()
			if err := f.Error(); err != nil {
				return err
			}
			got := f.Configuration().Servers
			member := slices.ContainsFunc(got, func(sv raft.Server) bool { return string(sv.ID) == id })
			if len(got) != want || member != with {
				return fmt.Errorf("%d servers (member %v), want %d (%v)", len(got), member, want, with)
			}
			return nil
		}
	}
	agent.WaitFor(t, 10*time.Second, "the follower knows the leader's address", func() error {
		_, err := servers[i].leaderHTTP()
		return err
	})
	must.NoError(t, servers[i].Leave())
	agent.WaitFor(t, 10*time.Second, "the server left", voters(2, false))

	cfgs[i].NodeID = id // read from the data dir anyway
	TestServer(t, cfgs[i])
	agent.WaitFor(t, 20*time.Second, "the server rejoined", voters(3, true))
}

// holdingDriver reports every change as waiting for its checkpoint while
// hold is set, as the nomad driver does until a trainer confirms one; the
// simulated cluster underneath has applied it.
type holdingDriver struct {
	Driver
	hold atomic.Bool
}

func (d *holdingDriver) held(reports []*structs.JobReport) []*structs.JobReport {
	if !d.hold.Load() {
		return reports
	}
	for _, r := range reports {
		if r.Change != nil {
			c := *r.Change
			c.Phase, c.Message = structs.ChangeCheckpointing, "waiting for a checkpoint"
			r.Change = &c
		}
	}
	return reports
}

func (d *holdingDriver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error) {
	reports, err := d.Driver.Enact(ctx, plan, jobs)
	return d.held(reports), err
}

func (d *holdingDriver) Status(ctx context.Context) ([]*structs.JobReport, error) {
	reports, err := d.Driver.Status(ctx)
	return d.held(reports), err
}

// TestLeader_ChangeInFlight: while a job's change waits for its
// checkpoint, the loop goes on: a dry run is answered, reported samples
// are ingested, the job shows as rescaling, and no round changes it
// again; once the change is done the job runs.
func TestLeader_ChangeInFlight(t *testing.T) {
	d := &holdingDriver{Driver: simDriver(t, 1)}
	d.hold.Store(true)
	s := TestServer(t, TestConfig(t, d))
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	var target *api.Placement
	agent.WaitFor(t, 20*time.Second, "a change in flight", func() error {
		sum, _, err := c.Jobs().Summary("a", nil)
		if err != nil {
			return err
		}
		if o := sum.Observed; o == nil || !o.Change.InFlight() {
			return fmt.Errorf("no change in flight: %+v", sum.Observed)
		}
		target = sum.Observed.Change.Target
		return nil
	})

	// The change is held until the test lets it go, below: a dry run
	// that waited for it would not be answered in the minute given.
	type planned struct {
		resp *api.PlanResponse
		err  error
	}
	answer := make(chan planned, 1)
	go func() {
		resp, _, err := c.Jobs().Plan(demoJob(t, "b"), nil)
		answer <- planned{resp, err}
	}()
	var resp *api.PlanResponse
	select {
	case a := <-answer:
		must.NoError(t, a.err)
		resp = a.resp
	case <-time.After(time.Minute):
		t.Fatal("the dry run waited for the change")
	}
	must.NotNil(t, resp.Placement)

	code, body := postReport(t, s, `{"samples": [{"job_id": "a", "step": 1000000, "checkpoint_step": 999999, "num_workers": 1}]}`)
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	must.StrContains(t, body, `"Accepted":1`, must.Sprint("samples are committed while the checkpoint is awaited"))

	// Rounds meanwhile keep the job at its target.
	_, _, err = c.Jobs().Register(demoJob(t, "b"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "a round with b", func() error {
		plan, _, err := c.LatestPlan(nil)
		if err != nil {
			return err
		}
		if len(plan.Placements) != 2 {
			return fmt.Errorf("%d placements", len(plan.Placements))
		}
		return nil
	})
	plan, _, err := c.LatestPlan(nil)
	must.NoError(t, err)
	must.True(t, plan.Placements[0].SameTasks(target), must.Sprint("the job in flight keeps its target"))
	sum, _, err := c.Jobs().Summary("a", nil)
	must.NoError(t, err)
	must.True(t, sum.Observed.Change.InFlight())
	must.True(t, sum.Observed.Change.Target.SameTasks(target), must.Sprint("no second change"))

	d.hold.Store(false)
	agent.WaitFor(t, 20*time.Second, "the change done", func() error {
		sum, _, err := c.Jobs().Summary("a", nil)
		switch {
		case err != nil:
			return err
		case sum.Observed.Change.InFlight():
			return fmt.Errorf("still %s", sum.Observed.Change.Phase)
		}
		return nil
	})
	must.NoError(t, jobStatus(t, c, "a", structs.JobStatusRunning)())
}

// TestLeader_UpdateLowersMax: a new version that lowers a running job's
// maximum reaches the scheduler at once and takes effect in the round it
// triggers; registering it again changes nothing.
func TestLeader_UpdateLowersMax(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Algorithm = "drf" // grows every job to its maximum while there is room
	cfg.Interval = time.Hour
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	workers := func(want int) func() error {
		return func() error {
			hist, _, err := c.Jobs().History("a", nil)
			switch {
			case err != nil:
				return err
			case len(hist) == 0:
				return errors.New("nothing ran yet")
			case hist[0].Placement.NumWorkers != want:
				return fmt.Errorf("%d workers run, want %d", hist[0].Placement.NumWorkers, want)
			}
			return nil
		}
	}
	agent.WaitFor(t, 20*time.Second, "4 workers", workers(4))

	lower := demoJob(t, "a")
	lower.JobHCL = strings.Replace(lower.JobHCL, "max = 4", "max = 2", 1)
	resp, _, err := c.Jobs().Update("a", lower, nil)
	must.NoError(t, err)
	must.Eq(t, 1, resp.Version)
	// With hour-long intervals, only the round the new version triggers
	// can make the change.
	agent.WaitFor(t, 10*time.Second, "2 workers", workers(2))

	again, _, err := c.Jobs().Update("a", lower, nil)
	must.NoError(t, err)
	must.True(t, again.Unchanged)
	must.Eq(t, 1, again.Version)
	versions, _, err := c.Jobs().Versions("a", nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, versions)
}

// enacted is one job of a plan a driver was handed: its spec's version
// and the workers placed.
type enacted struct {
	job     string
	version uint64
	workers int
}

// recordingDriver records every job of every plan it is handed.
type recordingDriver struct {
	Driver
	mu   sync.Mutex
	jobs []enacted
}

func (d *recordingDriver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error) {
	d.mu.Lock()
	for i, p := range plan.Placements {
		d.jobs = append(d.jobs, enacted{job: p.JobID, version: jobs[i].Version, workers: p.NumWorkers})
	}
	d.mu.Unlock()
	return d.Driver.Enact(ctx, plan, jobs)
}

// recorded returns what the driver was handed so far.
func (d *recordingDriver) recorded() []enacted {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.jobs)
}

// TestLeader_PlanInForceOfAnOlderVersion: a new version that lowers a
// job's maximum lands, and its server goes down before a round plans it.
// The server that leads next does not enact the plan in force, made for
// the old version, with the new version's spec (4 workers of a job whose
// maximum is 2 now): the round it asks for plans the new version, and
// only that plan reaches the driver.
func TestLeader_PlanInForceOfAnOlderVersion(t *testing.T) {
	d := &recordingDriver{Driver: simDriver(t, 1)}
	cfg, g := gatedConfig(t, d)
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	g.until(t, map[string]uint64{"a": 0})
	g.release <- struct{}{} // fifo: its maximum, 4 workers
	agent.WaitFor(t, 20*time.Second, "a placed", jobStatus(t, c, "a", structs.JobStatusRunning))
	must.Eq(t, []enacted{{job: "a", version: 0, workers: 4}}, d.recorded()[:1])

	lower := demoJob(t, "a")
	lower.JobHCL = strings.Replace(lower.JobHCL, "max = 4", "max = 2", 1)
	_, _, err = c.Jobs().Update("a", lower, nil)
	must.NoError(t, err)
	g.until(t, map[string]uint64{"a": 1}) // held: no plan of version 1
	must.NoError(t, s.Shutdown())

	cfg2, g2 := gatedConfig(t, d)
	cfg2.DataDir = cfg.DataDir
	s2 := TestServer(t, cfg2)
	leaderOf(t, s2)
	g2.until(t, map[string]uint64{"a": 1})
	for _, e := range d.recorded() {
		must.Eq(t, 0, e.version, must.Sprintf("version 1 enacted before its round: %+v", d.recorded()))
	}
	g2.letAll()
	c2 := client(t, s2)
	agent.WaitFor(t, 20*time.Second, "2 workers", func() error {
		sum, _, err := c2.Jobs().Summary("a", nil)
		switch {
		case err != nil:
			return err
		case sum.Observed == nil || sum.Observed.Placement == nil || sum.Observed.Placement.NumWorkers != 2:
			return fmt.Errorf("observed: %+v", sum.Observed)
		}
		return nil
	})
	for _, e := range d.recorded() {
		if e.version == 1 {
			must.Eq(t, 2, e.workers, must.Sprintf("version 1 placed beyond its maximum: %+v", d.recorded()))
		}
	}
}

// TestLeader_RefusedVersion: a version the scheduler refuses (one that
// reached the state without the API's checks) stalls no plan, and the
// job's placement is enacted with the spec of the version it was made
// for, never with the refused one.
func TestLeader_RefusedVersion(t *testing.T) {
	d := &recordingDriver{Driver: simDriver(t, 1)}
	cfg := TestConfig(t, d)
	cfg.Algorithm = "fifo"
	s := leaderOf(t, TestServer(t, cfg))
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "a placed", jobStatus(t, c, "a", structs.JobStatusRunning))

	a, err := state.JobByID(s.State().Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	bad := a.Copy()
	bad.Worker = nil // Validate refuses a job without a worker template
	must.Error(t, bad.Validate())
	_, _, err = s.apply(context.Background(), fsm.JobRegisterType, &fsm.JobRegisterRequest{Job: bad, Time: time.Now().UnixNano()})
	must.NoError(t, err)
	refused := len(d.recorded())

	_, _, err = c.Jobs().Register(demoJob(t, "b"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "b placed", jobStatus(t, c, "b", structs.JobStatusRunning))
	var after []enacted
	for _, e := range d.recorded()[refused:] {
		if e.job == "a" {
			after = append(after, e)
		}
	}
	must.SliceNotEmpty(t, after, must.Sprint("no plan after the refused version named a"))
	for _, e := range after {
		must.Eq(t, 0, e.version, must.Sprintf("a enacted with the refused version: %+v", after))
	}
}

// TestLeader_EnactRetried: a plan the driver refused is enacted again at
// every step, and once the driver takes it the job runs (the leader used
// to crash there).
func TestLeader_EnactRetried(t *testing.T) {
	d := &TestOutageDriver{Driver: simDriver(t, 50)}
	d.EnactDown.Store(true)
	s := TestServer(t, TestConfig(t, d))
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 10*time.Second, "a driver error", func() error {
		events, _, err := c.Events("", nil)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.Type == structs.EventDriverError {
				return nil
			}
		}
		return errors.New("no driver error yet")
	})
	d.EnactDown.Store(false)
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "a", structs.JobStatusRunning))
	must.True(t, s.IsLeader())
}
