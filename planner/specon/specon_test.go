package specon

import (
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/planner/roundrobin"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// testBases is a registry of three bases.
func testBases(name string) (planner.Factory, bool) {
	f, ok := map[string]planner.Factory{fifo.Name: fifo.New, drf.Name: drf.New, roundrobin.Name: roundrobin.New}[name]
	return f, ok
}

const now = int64(1_700_000_000_000_000_000)

// Progress histories ending at now: Categorize makes them PC, WC, CC, and
// CC with a request (see TestCategorize).
var (
	progressing = series(now-4*int64(30*time.Second), 1, 0.5, 0.25, 0.125, 0.0625)
	watching    = series(now-2*int64(30*time.Second), 1, 0.9, 0.899)
	converged   = series(now-3*int64(30*time.Second), 1, 0.9, 0.899, 0.8985)
	requesting  = series(now-4*int64(30*time.Second), 1, 0.9, 0.899, 0.8985, 0.8984)
)

// fixture is a cluster of CPU-only nodes running one-worker all-reduce
// jobs.
type fixture struct {
	t *testing.T
	h *planner.Harness
}

func newFixture(t *testing.T, nodes, cpu int) *fixture {
	h := planner.NewHarness(t)
	h.AddNodes("n", nodes, cpu, 64*1024, 0)
	return &fixture{t: t, h: h}
}

// job adds a job of one worker with cpu MHz running on node (none when
// ""), with its progress and its current placement's reason.
func (f *fixture) job(id, node string, cpu int, progress []planner.ProgressPoint, reason string) *planner.Job {
	j := &structs.Job{
		ID: id,
		Training: &structs.Training{
			Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
			GlobalBatchSize: 64, StepsPerEpoch: 100,
			Convergence: &structs.Convergence{MaxEpochs: 10},
		},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 1}},
		Worker:  &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: cpu, MemoryMB: 128}},
	}
	pj := f.h.AddJob(j, nil)
	pj.Progress = progress
	if node != "" {
		pj.Current = &structs.Placement{Namespace: j.Namespace, JobID: id, NumWorkers: 1,
			Nodes: []*structs.NodeTasks{{NodeID: node, Workers: 1}}, Reason: reason}
	}
	return pj
}

// plan runs SpeCon with opts at now and returns each job's node ("" when
// paused) and reason.
func (f *fixture) plan(opts Options) (nodes, reasons map[string]string) {
	f.t.Helper()
	s, err := NewWithOptions(testBases, opts)
	must.NoError(f.t, err)
	req := f.h.Request()
	req.Now = now
	dec, err := s.Plan(req)
	must.NoError(f.t, err)
	must.NoError(f.t, planner.CheckDecision(req, dec))
	nodes, reasons = map[string]string{}, map[string]string{}
	for _, p := range dec.Placements {
		if len(p.Nodes) > 0 {
			nodes[p.JobID] = p.Nodes[0].NodeID
		}
		reasons[p.JobID] = p.Reason
	}
	return nodes, reasons
}

// marked returns the reason mark of a migrated job at t.
func marked(t int64, what string) string {
	return mark{migrated: true, since: t}.reason(what)
}

// TestSchedule walks Algorithm 2 on hand-computed scores, w_pc = 2,
// w_wc = 1.5, w_cc = 1.
func TestSchedule(t *testing.T) {
	t.Run("moves to the one least-scored node", func(t *testing.T) {
		// n-0: c (CC) + 2 PC = 1 + 4 = 5; n-1: PC + WC = 3.5; n-2: 2 PC = 4.
		f := newFixture(t, 3, 8000)
		f.job("c", "n-0", 1000, requesting, "")
		f.job("p1", "n-0", 1000, progressing, "")
		f.job("p2", "n-0", 1000, progressing, "")
		f.job("p3", "n-1", 1000, progressing, "")
		f.job("w1", "n-1", 1000, watching, "")
		f.job("p4", "n-2", 1000, progressing, "")
		f.job("p5", "n-2", 1000, progressing, "")
		nodes, reasons := f.plan(Options{})
		must.Eq(t, "n-1", nodes["c"])
		must.StrHasPrefix(t, marked(now, "migrated from n-0 to n-1"), reasons["c"])
		for _, id := range []string{"p1", "p2", "p3", "w1", "p4", "p5"} {
			must.StrHasPrefix(t, "fifo:", reasons[id], must.Sprint(id))
		}
	})
	t.Run("stays when its host is least-scored, and is marked", func(t *testing.T) {
		// n-0: c + 2 WC = 1 + 3 = 4; n-1: 2 PC = 4; n-2: 2 PC + CC = 5.
		f := newFixture(t, 3, 8000)
		f.job("c", "n-0", 1000, requesting, "")
		f.job("w1", "n-0", 1000, watching, "")
		f.job("w2", "n-0", 1000, watching, "")
		f.job("p1", "n-1", 1000, progressing, "")
		f.job("p2", "n-1", 1000, progressing, "")
		f.job("p3", "n-2", 1000, progressing, "")
		f.job("p4", "n-2", 1000, progressing, "")
		f.job("c2", "n-2", 1000, converged, "")
		nodes, reasons := f.plan(Options{})
		must.Eq(t, "n-0", nodes["c"])
		must.StrHasPrefix(t, marked(now, "stays on n-0"), reasons["c"])
	})
	t.Run("ties go to the least loaded node", func(t *testing.T) {
		// n-1 and n-2 score 2 (one PC each); n-1 is half used, n-2 an
		// eighth: R picks n-2 (lines 17–21).
		f := newFixture(t, 3, 8000)
		f.job("c", "n-0", 1000, requesting, "")
		f.job("p1", "n-0", 1000, progressing, "")
		f.job("p2", "n-0", 1000, progressing, "")
		f.job("big", "n-1", 4000, progressing, "")
		f.job("small", "n-2", 1000, progressing, "")
		nodes, _ := f.plan(Options{})
		must.Eq(t, "n-2", nodes["c"])
	})
	t.Run("no request while one job at most progresses", func(t *testing.T) {
		// Line 15: |PC| + |WC| is 1, on n-0 and over the cluster.
		f := newFixture(t, 2, 8000)
		f.job("c", "n-0", 1000, requesting, "")
		f.job("p1", "n-0", 1000, progressing, "")
		for _, perNode := range []bool{false, true} {
			nodes, reasons := f.plan(Options{Line15PerNode: perNode})
			must.Eq(t, "n-0", nodes["c"])
			must.StrHasPrefix(t, "fifo:", reasons["c"])
		}
	})
	t.Run("line 15 counts the cluster, or the node with line15 = node", func(t *testing.T) {
		// One job in PC on n-0 beside c, two on n-1: |PC| + |WC| is 3 over
		// the cluster, 1 on n-0. Scores: n-0 = 1 + 2 = 3, n-1 = 4, n-2 =
		// 0: over the cluster c requests and moves to n-2; per node it
		// does not request.
		f := newFixture(t, 3, 8000)
		f.job("c", "n-0", 1000, requesting, "")
		f.job("p1", "n-0", 1000, progressing, "")
		f.job("p2", "n-1", 1000, progressing, "")
		f.job("p3", "n-1", 1000, progressing, "")
		nodes, reasons := f.plan(Options{NoRebalance: true})
		must.Eq(t, "n-2", nodes["c"])
		must.StrHasPrefix(t, marked(now, "migrated from n-0 to n-2"), reasons["c"])
		nodes, reasons = f.plan(Options{NoRebalance: true, Line15PerNode: true})
		must.Eq(t, "n-0", nodes["c"])
		must.StrHasPrefix(t, "fifo:", reasons["c"])
	})
	t.Run("a node without room is no candidate", func(t *testing.T) {
		// n-1 scores 0 but is full; n-2 scores 2.
		f := newFixture(t, 3, 4000)
		f.job("c", "n-0", 1000, requesting, "")
		f.job("p1", "n-0", 1000, progressing, "")
		f.job("p2", "n-0", 1000, progressing, "")
		f.h.Nodes[1].CPU = 500
		f.job("p3", "n-2", 1000, progressing, "")
		nodes, _ := f.plan(Options{})
		must.Eq(t, "n-2", nodes["c"])
	})
	t.Run("a migrated job is never scheduled again and keeps its mark", func(t *testing.T) {
		f := newFixture(t, 3, 8000)
		before := now - int64(time.Minute)
		f.job("c", "n-0", 1000, requesting, marked(before, "migrated from n-1 to n-0"))
		f.job("p1", "n-0", 1000, progressing, "")
		f.job("p2", "n-0", 1000, progressing, "")
		f.job("p3", "n-1", 1000, progressing, "")
		nodes, reasons := f.plan(Options{NoRebalance: true})
		must.Eq(t, "n-0", nodes["c"])
		must.StrHasPrefix(t, marked(before, "fifo:"), reasons["c"])
	})
	t.Run("watching jobs are not moved", func(t *testing.T) {
		f := newFixture(t, 2, 8000)
		f.job("c", "n-0", 1000, converged, "")
		f.job("p1", "n-0", 1000, progressing, "")
		f.job("p2", "n-0", 1000, progressing, "")
		nodes, _ := f.plan(Options{})
		must.Eq(t, "n-0", nodes["c"])
	})
}

// TestSchedule_OverRoundRobin: where the paper's fixed initial placement
// crowds a worker, SpeCon moves the converged job off it; over fifo,
// which starts the new job on the emptier worker, nothing moves.
func TestSchedule_OverRoundRobin(t *testing.T) {
	// Arrival order c1, c3, c4, new5 (c2, on n-1, has ended): round-robin
	// puts new5 on n-0, after c4's n-1, so n-0 holds c1 (requesting), c3
	// and new5 (both PC), and n-1 holds c4. Scores: n-0 = 1 + 2 + 2 = 5,
	// n-1 = 2; c1 moves to n-1.
	setup := func(t *testing.T) *fixture {
		f := newFixture(t, 2, 8000)
		for k, j := range []*planner.Job{
			f.job("c1", "n-0", 1000, requesting, ""),
			f.job("c3", "n-0", 1000, progressing, ""),
			f.job("c4", "n-1", 1000, progressing, ""),
			f.job("new5", "", 1000, nil, ""),
		} {
			j.Job.SubmitTime = now - int64(4-k)*int64(time.Minute)
		}
		return f
	}
	t.Run("roundrobin", func(t *testing.T) {
		nodes, reasons := setup(t).plan(Options{Base: roundrobin.Name})
		must.Eq(t, map[string]string{"c1": "n-1", "c3": "n-0", "c4": "n-1", "new5": "n-0"}, nodes)
		must.StrHasPrefix(t, marked(now, "migrated from n-0 to n-1"), reasons["c1"])
		must.Eq(t, "roundrobin: started at its request of 0 ps and 1 worker, in turn", reasons["new5"])
	})
	t.Run("fifo", func(t *testing.T) {
		// Per node (line15 = node), n-0 holds one job in PC beside c1:
		// no request. Over the cluster three are in PC: c1 requests, and
		// stays, its host scoring 3 against n-1's 4.
		nodes, reasons := setup(t).plan(Options{Line15PerNode: true})
		must.Eq(t, map[string]string{"c1": "n-0", "c3": "n-0", "c4": "n-1", "new5": "n-1"}, nodes)
		must.StrHasPrefix(t, "fifo:", reasons["c1"])
		nodes, reasons = setup(t).plan(Options{NoRebalance: true})
		must.Eq(t, map[string]string{"c1": "n-0", "c3": "n-0", "c4": "n-1", "new5": "n-1"}, nodes)
		must.StrHasPrefix(t, marked(now, "stays on n-0"), reasons["c1"])
	})
}

// TestRebalance walks Algorithm 3.
func TestRebalance(t *testing.T) {
	t.Run("an idle node takes the job converged last", func(t *testing.T) {
		// §V-C's example: 2 nodes, c1 and c2 on n-0 finished, c3 and c4
		// converged on n-1. Σ|w| = 2, bf = 1; n-0 is idle with 0 < bf
		// jobs and takes c4, whose d is least (lines 10–18).
		f := newFixture(t, 2, 8000)
		f.job("c3", "n-1", 1000, converged, marked(now-int64(2*time.Minute), "stays on n-1"))
		f.job("c4", "n-1", 1000, converged, marked(now-int64(time.Minute), "stays on n-1"))
		nodes, reasons := f.plan(Options{})
		must.Eq(t, "n-1", nodes["c3"])
		must.Eq(t, "n-0", nodes["c4"])
		must.StrHasPrefix(t, mark{migrated: true, since: now - int64(time.Minute), rebalanced: true}.reason("rebalanced from n-1 (2 jobs) to n-0 (0 jobs), balance factor 1"), reasons["c4"])
	})
	t.Run("a light node takes the job of least d from a heavy one", func(t *testing.T) {
		// n-0: 4 jobs (a, b marked), n-1: 1 job, n-2: 4 jobs (c marked,
		// latest). Σ = 9, bf = 3; T = {n : |w| < 2} = {n-1} (lines
		// 19–22); c has the least d and runs outside T (lines 23–25).
		f := newFixture(t, 3, 8000)
		f.job("a", "n-0", 1000, converged, marked(now-int64(5*time.Minute), "stays on n-0"))
		f.job("b", "n-0", 1000, converged, marked(now-int64(4*time.Minute), "stays on n-0"))
		f.job("x1", "n-0", 1000, progressing, "")
		f.job("x2", "n-0", 1000, progressing, "")
		f.job("y1", "n-1", 1000, progressing, "")
		f.job("c", "n-2", 1000, converged, marked(now-int64(3*time.Minute), "stays on n-2"))
		f.job("z1", "n-2", 1000, progressing, "")
		f.job("z2", "n-2", 1000, progressing, "")
		f.job("z3", "n-2", 1000, progressing, "")
		nodes, reasons := f.plan(Options{})
		must.Eq(t, "n-1", nodes["c"])
		must.StrContains(t, reasons["c"], "rebalanced from n-2 (4 jobs) to n-1 (1 jobs), balance factor 3")
		must.Eq(t, "n-0", nodes["a"])
		must.Eq(t, "n-0", nodes["b"])
	})
	t.Run("balanced enough: no move", func(t *testing.T) {
		// Σ = 5, bf = 2: no node is idle, none has fewer than bf − 1 = 1.
		f := newFixture(t, 2, 8000)
		f.job("a", "n-0", 1000, converged, marked(now-int64(time.Minute), "stays on n-0"))
		f.job("b", "n-0", 1000, converged, marked(now-int64(time.Minute), "stays on n-0"))
		f.job("c", "n-0", 1000, converged, marked(now-int64(time.Minute), "stays on n-0"))
		f.job("d", "n-0", 1000, progressing, "")
		f.job("e", "n-1", 1000, progressing, "")
		nodes, _ := f.plan(Options{})
		for _, id := range []string{"a", "b", "c", "d"} {
			must.Eq(t, "n-0", nodes[id])
		}
	})
	t.Run("a rebalanced job never moves again", func(t *testing.T) {
		f := newFixture(t, 2, 8000)
		r := mark{migrated: true, since: now - int64(time.Minute), rebalanced: true}
		f.job("c3", "n-1", 1000, converged, r.reason("rebalanced from n-0 (2 jobs) to n-1 (0 jobs)"))
		f.job("c4", "n-1", 1000, converged, r.reason("rebalanced from n-0 (2 jobs) to n-1 (0 jobs)"))
		nodes, reasons := f.plan(Options{})
		must.Eq(t, "n-1", nodes["c3"])
		must.Eq(t, "n-1", nodes["c4"])
		must.StrHasPrefix(t, r.reason("fifo:"), reasons["c4"])
	})
	t.Run("off", func(t *testing.T) {
		f := newFixture(t, 2, 8000)
		f.job("c3", "n-1", 1000, converged, marked(now-int64(2*time.Minute), "stays on n-1"))
		f.job("c4", "n-1", 1000, converged, marked(now-int64(time.Minute), "stays on n-1"))
		nodes, _ := f.plan(Options{NoRebalance: true})
		must.Eq(t, "n-1", nodes["c4"])
	})
}

func TestParseMark(t *testing.T) {
	cur := func(reason string) *structs.Placement {
		return &structs.Placement{JobID: "j", NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: "n", Workers: 1}}, Reason: reason}
	}
	must.Eq(t, mark{}, parseMark(nil))
	must.Eq(t, mark{}, parseMark(cur("fifo: running")))
	must.Eq(t, mark{}, parseMark(cur(markPrefix+"soon")))
	m := mark{migrated: true, since: 42}
	must.Eq(t, m, parseMark(cur(m.reason("x"))))
	m.rebalanced = true
	must.Eq(t, m, parseMark(cur(m.reason("x"))))
	paused := cur(m.reason("x"))
	paused.NumWorkers, paused.Nodes = 0, nil
	must.Eq(t, mark{}, parseMark(paused))
}

func TestSetConfig(t *testing.T) {
	s := New(testBases)
	must.NoError(t, s.SetConfig(map[string]string{"base": "drf", "alpha": "0.05", "interval": "20s", "w_pc": "3", "w_wc": "2", "w_cc": "1", "rebalance": "false", "line15": "node"}))
	must.Eq(t, Options{Base: "drf", Alpha: 0.05, Interval: 20 * time.Second, WPC: 3, WWC: 2, WCC: 1, NoRebalance: true, Line15PerNode: true}, s.Options())
	must.Eq(t, drf.Name, s.base.Name())
	for _, bad := range []map[string]string{
		{"base": "specon"},
		{"base": "nope"},
		{"alpha": "-1"},
		{"interval": "0s"},
		{"w_pc": "1", "w_wc": "2", "w_cc": "3"},
		{"w_pc": "3"},
		{"rebalance": "maybe"},
		{"line15": "rack"},
		{"colour": "red"},
	} {
		err := s.SetConfig(bad)
		must.Error(t, err, must.Sprint(bad))
		must.Eq(t, "drf", s.Options().Base, must.Sprint("a failed SetConfig changes nothing"))
	}
	must.NoError(t, s.SetConfig(nil))
	must.Eq(t, Options{Base: DefaultBase, Alpha: DefaultAlpha, Interval: DefaultInterval, WPC: DefaultWPC, WWC: DefaultWWC, WCC: DefaultWCC}, s.Options())
	must.True(t, strings.HasPrefix(s.Name(), "specon"))
}
