package structs

import (
	"math"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestPlacement_Validate(t *testing.T) {
	ok := &Placement{JobID: "a", NumPS: 1, NumWorkers: 3, Nodes: []*NodeTasks{
		{NodeID: "n1", PS: 1, Workers: 1}, {NodeID: "n2", Workers: 2},
	}}
	must.NoError(t, ok.Validate())
	batched := ok.Copy()
	batched.Batch = &Batch{Global: 3 * 64 * 2, Local: 64, AccumSteps: 1}
	must.NoError(t, batched.Validate())
	must.True(t, batched.SameTasks(ok), must.Sprint("a batch alone moves no task"))
	must.False(t, batched.Batch.Equal(ok.Batch))
	must.True(t, batched.Batch.Equal(batched.Copy().Batch))
	must.False(t, ok.Paused())
	must.True(t, (&Placement{JobID: "a"}).Paused())

	cases := []struct {
		name string
		p    *Placement
		msg  string
	}{
		{"sum", &Placement{JobID: "a", NumWorkers: 3, Nodes: []*NodeTasks{{NodeID: "n1", Workers: 2}}},
			"nodes hold 0 ps and 2 workers, but the placement says 0 and 3"},
		{"duplicate node", &Placement{JobID: "a", NumWorkers: 2, Nodes: []*NodeTasks{{NodeID: "n1", Workers: 1}, {NodeID: "n1", Workers: 1}}},
			`node "n1" appears more than once`},
		{"negative", &Placement{JobID: "a", NumWorkers: -1}, "must not be negative"},
		{"batch product", &Placement{JobID: "a", NumWorkers: 2, Nodes: []*NodeTasks{{NodeID: "n1", Workers: 2}}, Batch: &Batch{Global: 100, Local: 32, AccumSteps: 1}},
			"global batch 100 is not workers × local × (accum_steps + 1) = 2 × 32 × 2"},
		{"batch local", &Placement{JobID: "a", NumWorkers: 2, Nodes: []*NodeTasks{{NodeID: "n1", Workers: 2}}, Batch: &Batch{Global: 0, Local: 0}},
			"local batch 0 must be at least 1"},
		{"batch paused", &Placement{JobID: "a", Batch: &Batch{Global: 32, Local: 32}}, "is set for a placement with no workers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.ErrorContains(t, tc.p.Validate(), tc.msg)
		})
	}

	plan := &Plan{Placements: []*Placement{ok, ok}}
	must.ErrorContains(t, plan.Validate(), `job "a" in namespace "" is placed more than once`)
}

func TestSample_Validate(t *testing.T) {
	good := Sample{JobID: "a", Role: RoleWorker, Step: 10, Epoch: 0.1, Loss: 2.3, StepTimeS: 0.5, CheckpointStep: 10, NumPS: 1, NumWorkers: 2}
	must.NoError(t, good.Validate())
	noisy := good
	noisy.GradSqr, noisy.GradVar, noisy.BatchSize, noisy.LocalBatchSize, noisy.AccumSteps = 0.5, 2, 256, 64, 1
	must.NoError(t, noisy.Validate())

	cases := []struct {
		name   string
		mutate func(*Sample)
		path   string
	}{
		{"nan loss", func(s *Sample) { s.Loss = math.NaN() }, "Loss"},
		{"inf step time", func(s *Sample) { s.StepTimeS = math.Inf(1) }, "StepTimeS"},
		{"negative step", func(s *Sample) { s.Step, s.CheckpointStep = -1, 0 }, "Step"},
		{"checkpoint ahead", func(s *Sample) { s.CheckpointStep = 11 }, "CheckpointStep"},
		{"role", func(s *Sample) { s.Role = "chief" }, "Role"},
		{"job", func(s *Sample) { s.JobID = "" }, "JobID"},
		{"nan grad_sqr", func(s *Sample) { s.GradSqr, s.GradVar, s.BatchSize = math.NaN(), 1, 64 }, "GradSqr"},
		{"negative grad_var", func(s *Sample) { s.GradSqr, s.GradVar, s.BatchSize = 1, -1, 64 }, "GradVar"},
		{"inf grad_var", func(s *Sample) { s.GradSqr, s.GradVar, s.BatchSize = 1, math.Inf(1), 64 }, "GradVar"},
		{"grad without batch", func(s *Sample) { s.GradSqr, s.GradVar = 1, 2 }, "BatchSize"},
		{"negative batch", func(s *Sample) { s.BatchSize = -1 }, "BatchSize"},
		{"negative local batch", func(s *Sample) { s.LocalBatchSize = -1 }, "LocalBatchSize"},
		{"negative accum", func(s *Sample) { s.AccumSteps = -2 }, "AccumSteps"},
		// AccumSteps = MaxInt64 wrapped to a division by zero in the
		// leader's goodput observation.
		{"accum beyond the maximum", func(s *Sample) { s.AccumSteps = math.MaxInt64 }, "AccumSteps"},
		{"workers beyond the maximum", func(s *Sample) { s.NumWorkers = MaxTasks + 1 }, "NumWorkers"},
		{"step beyond the maximum", func(s *Sample) { s.Step, s.CheckpointStep = 1<<62, 0 }, "Step"},
		{"rank beyond the maximum", func(s *Sample) { s.Rank = 1 << 40 }, "Rank"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.mutate(&s)
			errs := FieldErrors(s.Validate())
			must.Len(t, 1, errs)
			must.Eq(t, tc.path, errs[0].Path)
		})
	}
	must.True(t, Terminal(JobStatusComplete))
	must.False(t, Terminal(JobStatusRescaling))
}

func TestSample_ValidateTime(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name string
		time int64
		err  string
	}{
		{"unstamped", 0, ""},
		{"past", now.Add(-time.Hour).UnixNano(), ""},
		{"now", now.UnixNano(), ""},
		{"at the bound", now.Add(MaxSampleSkew).UnixNano(), ""},
		{"past the bound", now.Add(MaxSampleSkew + time.Millisecond).UnixNano(), "Time: is 1m0.001s ahead of the receiver's clock; at most 1m0s is allowed"},
		{"far ahead", math.MaxInt64, "Time: is 2089825h33m56.855s ahead"},
		{"negative", math.MinInt64, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Sample{JobID: "a", Time: tc.time}
			err := s.ValidateTime(now)
			if tc.err == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, tc.err)
			errs := FieldErrors(err)
			must.Len(t, 1, errs)
			must.Eq(t, "Time", errs[0].Path)
		})
	}
}

func TestPlacement_SameTasks(t *testing.T) {
	p := &Placement{JobID: "a", NumPS: 1, NumWorkers: 3, Reason: "first", Nodes: []*NodeTasks{
		{NodeID: "n1", PS: 1, Workers: 1}, {NodeID: "n2", Workers: 2},
	}}
	moved := p.Copy()
	moved.Nodes[1].NodeID = "n3"
	reasoned := p.Copy()
	reasoned.Reason = "second"
	paused := &Placement{JobID: "a", Reason: "waiting"}
	cases := []struct {
		name string
		a, b *Placement
		same bool
	}{
		{"itself", p, p.Copy(), true},
		{"another reason", p, reasoned, true},
		{"another node", p, moved, false},
		{"more workers", p, &Placement{JobID: "a", NumPS: 1, NumWorkers: 4, Nodes: p.Nodes}, false},
		{"paused and nil", paused, nil, true},
		{"nil and nil", nil, nil, true},
		{"placed and nil", p, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.same, tc.a.SameTasks(tc.b))
			must.Eq(t, tc.same, tc.b.SameTasks(tc.a))
		})
	}
}

func TestPlacement_Sizes(t *testing.T) {
	big := TaskSize{CPU: 4000, MemoryMB: 1024}
	ok := &Placement{JobID: "a", NumPS: 2, NumWorkers: 3, Nodes: []*NodeTasks{
		{NodeID: "n1", PS: 1, Workers: 1},
		{NodeID: "n1", PS: 1, PSSize: big},
		{NodeID: "n2", Workers: 2, WorkerSize: TaskSize{MemoryMB: 512}},
	}}
	must.NoError(t, ok.Validate())

	cases := []struct {
		name  string
		nodes []*NodeTasks
		msg   string
	}{
		{"same node and sizes", []*NodeTasks{{NodeID: "n1", Workers: 1, WorkerSize: big}, {NodeID: "n1", Workers: 1, WorkerSize: big}},
			`node "n1" appears more than once with the same sizes`},
		{"size without tasks", []*NodeTasks{{NodeID: "n1", Workers: 2, PSSize: big}},
			"nodes[0].ps_size: is set for a role with no task on the node"},
		{"negative size", []*NodeTasks{{NodeID: "n1", Workers: 2, WorkerSize: TaskSize{CPU: -1}}},
			"nodes[0].worker_size: sizes must not be negative (cpu -1, memory 0)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.ErrorContains(t, (&Placement{JobID: "a", NumWorkers: 2, Nodes: tc.nodes}).Validate(), tc.msg)
		})
	}

	// A change of size alone is a change.
	resized := ok.Copy()
	resized.Nodes[2].WorkerSize.MemoryMB = 1024
	must.False(t, ok.SameTasks(resized))
	resized.Nodes[2].WorkerSize.MemoryMB = 512
	resized.Actions = []*TaskAction{{Kind: ActionResized, Role: RoleWorker, Rank: -1}}
	must.True(t, ok.SameTasks(resized), must.Sprint("actions do not count"))

	nodes := []*NodeTasks{
		{NodeID: "n2", Workers: 1},
		{NodeID: "n1", Workers: 1, WorkerSize: big},
		{NodeID: "n1", Workers: 1},
		{NodeID: "n1", PS: 1, PSSize: TaskSize{CPU: 1}},
	}
	SortNodeTasks(nodes)
	must.Eq(t, []*NodeTasks{
		{NodeID: "n1", Workers: 1},
		{NodeID: "n1", Workers: 1, WorkerSize: big},
		{NodeID: "n1", PS: 1, PSSize: TaskSize{CPU: 1}},
		{NodeID: "n2", Workers: 1},
	}, nodes)
}

func TestJobUsage_Copy(t *testing.T) {
	u := &JobUsage{JobID: "a", Tasks: []*TaskUsage{{Role: RoleWorker, CPUMHz: 100}},
		ByShape: []ShapeUsage{{Shape: Shape{PS: 1, Workers: 1}, WorkerCPUMHz: 2500, PSCPUMHz: 5700}}}
	c := u.Copy()
	must.Eq(t, u, c)
	c.Tasks[0].CPUMHz = 200
	c.ByShape[0].PSCPUMHz = 1
	must.Eq(t, 100, u.Tasks[0].CPUMHz)
	must.Eq(t, 5700, u.Shape(Shape{PS: 1, Workers: 1}).PSCPUMHz)
	must.Nil(t, u.Shape(Shape{PS: 2, Workers: 1}))
	must.Nil(t, (*JobUsage)(nil).Shape(Shape{}))

	p := &Placement{JobID: "a", Actions: []*TaskAction{{Kind: ActionOOMResized, Details: map[string]string{"from": "128"}}}}
	pc := p.Copy()
	pc.Actions[0].Details["from"] = "256"
	must.Eq(t, "128", p.Actions[0].Details["from"])
}
