package algorithm

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	pb "github.com/caravan-sched/caravan/plugins/algorithm/proto/v1"
	"github.com/caravan-sched/caravan/structs"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shoenig/test/must"
	"google.golang.org/protobuf/proto"
)

// equateEmpty treats nil and empty slices and maps alike, which the wire
// cannot tell apart. Pointers are compared by what they point to, so a nil
// submessage must come back nil.
var equateEmpty = must.Cmp(cmpopts.EquateEmpty())

// withoutDriverSettings clears what RequestToProto deliberately does not
// send: every role's Config and Env. It reports whether there was any.
func withoutDriverSettings(req *planner.Request) bool {
	had := false
	for _, j := range req.Jobs {
		for _, r := range []*structs.Role{j.Job.Worker, j.Job.ParameterServer} {
			if r == nil {
				continue
			}
			had = had || r.Config != nil || r.Env != nil
			r.Config, r.Env = nil, nil
		}
	}
	return had
}

// wire sends p through its byte form.
func wire[M proto.Message](t testing.TB, p M, into M) M {
	t.Helper()
	b, err := proto.Marshal(p)
	must.NoError(t, err)
	must.NoError(t, proto.Unmarshal(b, into))
	return into
}

// TestRequest_RoundTrip checks that a request comes back from its wire form
// as it was, but for the roles' Config and Env, both from the message and
// from its bytes.
func TestRequest_RoundTrip(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(200) {
		req := planner.RandomRequest(rand.New(rand.NewPCG(seed, 3)))
		note(seen, req)
		msg := RequestToProto(req)

		got, err := RequestFromProto(msg)
		must.NoError(t, err, must.Sprintf("seed %d", seed))
		for _, j := range got.Jobs {
			must.Nil(t, j.Job.Worker.Config)
			must.Nil(t, j.Job.Worker.Env)
		}
		fromBytes, err := RequestFromProto(wire(t, msg, &pb.PlanRequest{}))
		must.NoError(t, err, must.Sprintf("seed %d", seed))

		if withoutDriverSettings(req) {
			seen["driver settings dropped"]++
		}
		must.Eq(t, req, got, equateEmpty, must.Sprintf("seed %d", seed))
		// Both were decoded alike, so they must agree exactly.
		must.Eq(t, got, fromBytes, must.Sprintf("seed %d: through bytes", seed))
	}
	// The round trips above prove something only if the requests held
	// every case.
	for _, what := range []string{
		"node meta", "device health description", "int attribute", "float attribute",
		"string attribute", "bool attribute", "attribute unit", "all-reduce job", "ps bounds",
		"ps template", "device request", "device constraint", "device affinity", "job affinity",
		"speed prior", "current", "no current", "loss", "no loss", "speed", "no speed",
		"young", "driver settings dropped", "ranges", "usage", "since", "sized current", "attained service",
		"batch bounds", "local batch bounds", "current batch", "perf", "no perf", "perf by type", "grad", "no grad", "restarts", "restart cost",
	} {
		must.Positive(t, seen[what], must.Sprintf("no random request had %s", what))
	}
}

// note counts the cases req holds.
func note(seen map[string]int, req *planner.Request) {
	count := func(what string, ok bool) {
		if ok {
			seen[what]++
		}
	}
	for _, n := range req.Nodes {
		count("node meta", len(n.Meta) > 0)
		for _, d := range n.Devices {
			for _, inst := range d.Instances {
				count("device health description", inst.HealthDescription != "")
			}
			for _, a := range d.Attributes {
				count("int attribute", a.Int != nil)
				count("float attribute", a.Float != nil)
				count("string attribute", a.String != nil)
				count("bool attribute", a.Bool != nil)
				count("attribute unit", a.Unit != "")
			}
		}
	}
	for _, j := range req.Jobs {
		spec := j.Job
		count("all-reduce job", spec.Elastic.ParameterServers == nil)
		count("ps bounds", spec.Elastic.ParameterServers != nil)
		count("ps template", spec.ParameterServer != nil)
		count("job affinity", len(spec.Affinities) > 0)
		count("speed prior", len(spec.Training.Speeds) > 0)
		for _, d := range spec.Worker.Resources.Devices {
			count("device request", true)
			count("device constraint", len(d.Constraints) > 0)
			count("device affinity", len(d.Affinities) > 0)
		}
		count("current", j.Current != nil)
		count("no current", j.Current == nil)
		count("loss", j.Loss != nil)
		count("no loss", j.Loss == nil)
		count("speed", j.Speed != nil)
		count("no speed", j.Speed == nil)
		count("young", j.Young)
		count("subtasks", j.Subtasks != nil)
		count("no subtasks", j.Subtasks == nil)
		count("progress", len(j.Progress) > 0)
		count("no progress", len(j.Progress) == 0)
		count("ranges", spec.Worker.Resources.Ranged())
		count("usage", j.Usage != nil)
		count("since", j.Since != 0)
		count("attained service", j.AttainedService != 0)
		count("batch bounds", spec.Training.BatchSize != nil)
		count("local batch bounds", spec.Training.BatchSize != nil && spec.Training.BatchSize.MinLocal > 0)
		count("current batch", j.Current != nil && j.Current.Batch != nil)
		count("perf", j.Perf != nil)
		count("no perf", j.Perf == nil)
		count("perf by type", len(j.PerfByType) > 0)
		count("grad", j.Grad != nil)
		count("no grad", j.Grad == nil)
		count("restarts", j.Restarts > 0)
		count("restart cost", j.RestartCost > 0)
		if j.Current != nil {
			for _, nt := range j.Current.Nodes {
				count("sized current", nt.Sized())
			}
		}
	}
}

func TestRequest_RoundTripEdges(t *testing.T) {
	cases := map[string]*planner.Request{
		"empty":    {},
		"bare job": {Jobs: []*planner.Job{{Job: &structs.Job{ID: "a"}}}},
		"zero submessages": {
			Nodes: []*structs.Node{{ID: "n", Devices: []*structs.NodeDeviceResource{{}}}},
			Jobs: []*planner.Job{{
				Job: &structs.Job{
					ID:       "a",
					Training: &structs.Training{Convergence: &structs.Convergence{}},
					Elastic:  &structs.Elastic{ParameterServers: &structs.Bounds{}, Checkpoint: &structs.Checkpoint{Timeout: 1}},
					Worker:   &structs.Role{Resources: &structs.Resources{Devices: []*structs.RequestedDevice{{}}}},
				},
				Current: &structs.Placement{JobID: "a"},
				Loss:    &model.Loss{},
				Speed:   &model.Speed{},
			}},
		},
		"extremes": {
			Now: math.MinInt64,
			Nodes: []*structs.Node{{ID: "n", CPU: math.MaxInt, MemoryMB: math.MinInt, Devices: []*structs.NodeDeviceResource{{
				Attributes: map[string]*structs.Attribute{"f": {Float: ptr(math.Inf(-1))}, "e": {String: ptr("")}, "z": {Int: ptr(int64(0))}},
			}}}},
			Jobs: []*planner.Job{{
				Job:   &structs.Job{ID: "a", Version: math.MaxUint64, Elastic: &structs.Elastic{Checkpoint: &structs.Checkpoint{Signal: "SIGUSR1", Timeout: math.MinInt64}}},
				Speed: &model.Speed{Theta: [5]float64{-1, 0, math.MaxFloat64, math.SmallestNonzeroFloat64, 5}},
			}},
		},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RequestFromProto(wire(t, RequestToProto(req), &pb.PlanRequest{}))
			must.NoError(t, err)
			must.Eq(t, req, got, equateEmpty)
		})
	}
}

func TestDecision_RoundTrip(t *testing.T) {
	for seed := range uint64(50) {
		req := planner.RandomRequest(rand.New(rand.NewPCG(seed, 5)))
		dec := &planner.Decision{}
		for _, j := range req.Jobs {
			p := j.Current
			if p == nil {
				p = planner.Paused(j, "waiting for capacity")
			}
			dec.Placements = append(dec.Placements, p)
		}
		msg := DecisionToProto(dec)
		got, err := DecisionFromProto(msg)
		must.NoError(t, err)
		must.Eq(t, dec, got, equateEmpty, must.Sprintf("seed %d", seed))
		got, err = DecisionFromProto(wire(t, msg, &pb.PlanResponse{}))
		must.NoError(t, err)
		must.Eq(t, dec, got, equateEmpty, must.Sprintf("seed %d: through bytes", seed))
	}

	t.Run("empty", func(t *testing.T) {
		got, err := DecisionFromProto(DecisionToProto(&planner.Decision{}))
		must.NoError(t, err)
		must.Eq(t, &planner.Decision{}, got, equateEmpty)
	})
	t.Run("nil", func(t *testing.T) {
		must.Nil(t, DecisionToProto(nil))
		must.Nil(t, RequestToProto(nil))
	})
}

// validRequest returns the wire form of a small valid request: one GPU
// node and one PS job that runs on it with a fitted speed model.
func validRequest(tb testing.TB) *pb.PlanRequest {
	h := planner.NewHarness(tb)
	node := h.AddNodes("n", 1, 8000, 16384, 2)[0]
	j := planner.MockJob("a", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 2})
	j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	j.Worker.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	j.Training.Speeds = []*structs.SpeedPrior{{PS: 1, Workers: 1, StepsPerSecond: 2}}
	return RequestToProto(&planner.Request{
		Nodes: []*structs.Node{node},
		Jobs: []*planner.Job{{
			Job:     j,
			Current: &structs.Placement{JobID: "a", NumPS: 1, NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: node.ID, PS: 1, Workers: 1}}},
			Speed:   planner.MockSpeed(),
		}},
	})
}

func TestRequestFromProto_Malformed(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(p *pb.PlanRequest)
		want   []string
		only32 bool
	}{
		{
			name:   "nil node",
			break_: func(p *pb.PlanRequest) { p.Nodes = append(p.Nodes, nil) },
			want:   []string{"nodes[1]: nil element"},
		},
		{
			name:   "node without id",
			break_: func(p *pb.PlanRequest) { p.Nodes[0].Id = "" },
			want:   []string{"nodes[0]: id: is required"},
		},
		{
			name:   "attribute without value",
			break_: func(p *pb.PlanRequest) { p.Nodes[0].Devices[0].Attributes["memory"] = &pb.Attribute{Unit: "GiB"} },
			want:   []string{`nodes[0] ("n-0"): devices[0].attributes["memory"]: no value set`},
		},
		{
			name:   "nil attribute",
			break_: func(p *pb.PlanRequest) { p.Nodes[0].Devices[0].Attributes["memory"] = nil },
			want:   []string{`nodes[0] ("n-0"): devices[0].attributes["memory"]: nil attribute`},
		},
		{
			name: "nil device and instance",
			break_: func(p *pb.PlanRequest) {
				p.Nodes[0].Devices[0].Instances[1] = nil
				p.Nodes[0].Devices = append(p.Nodes[0].Devices, nil)
			},
			want: []string{
				`nodes[0] ("n-0"): devices[0].instances[1]: nil element`,
				`nodes[0] ("n-0"): devices[1]: nil element`,
			},
		},
		{
			name:   "nil job",
			break_: func(p *pb.PlanRequest) { p.Jobs = []*pb.Job{nil, p.Jobs[0]} },
			want:   []string{"jobs[0]: nil element"},
		},
		{
			name:   "job without spec",
			break_: func(p *pb.PlanRequest) { p.Jobs[0].Spec = nil },
			want:   []string{"jobs[0]: no spec"},
		},
		{
			name:   "job without id",
			break_: func(p *pb.PlanRequest) { p.Jobs[0].Spec.Id = "" },
			want:   []string{"jobs[0]: spec.id: is required"},
		},
		{
			name: "goodput inputs a model cannot compute with",
			break_: func(p *pb.PlanRequest) {
				p.Jobs[0].Perf = &pb.PerfFit{AlphaC: math.NaN(), BetaC: 1, AlphaN: 1, BetaN: 1, AlphaR: 1, BetaR: 1, Gamma: 11}
				p.Jobs[0].Grad = &pb.GradParams{Sqr: -1, Var: math.Inf(1)}
				p.Jobs[0].RestartCost = math.NaN()
				p.Jobs[0].PerfByType = map[string]*pb.PerfFit{
					"T4": {AlphaC: 1, BetaC: 1, AlphaN: 1, BetaN: 1, AlphaR: 1, BetaR: 1, Gamma: 2, MaxLocal: -1},
					"":   {AlphaC: 1, BetaC: 1, AlphaN: 1, BetaN: 1, AlphaR: 1, BetaR: 1, Gamma: 2},
				}
			},
			want: []string{
				`jobs[0] ("a"): perf: parameter 0 is NaN, not a positive finite number`,
				`jobs[0] ("a"): perf.gamma: 11 is outside [1, 10]`,
				`jobs[0] ("a"): restart_cost: NaN is not a finite number, not negative`,
				`jobs[0] ("a"): perf_by_type: GPU type "": needs a name of at most 128 characters and a fit`,
				`jobs[0] ("a"): perf_by_type["T4"].max_local: -1 is not a finite number, not negative`,
				`jobs[0] ("a"): grad: -1 is not a finite number at least 0`,
				`jobs[0] ("a"): grad: +Inf is not a finite number at least 0`,
			},
		},
		{
			name:   "too many speed coefficients",
			break_: func(p *pb.PlanRequest) { p.Jobs[0].Speed.Theta = make([]float64, 7) },
			want:   []string{`jobs[0] ("a"): speed model has 7 coefficients, at most 5`},
		},
		{
			name: "nil elements in the spec",
			break_: func(p *pb.PlanRequest) {
				s := p.Jobs[0].Spec
				s.Constraints = []*pb.Constraint{nil}
				s.Affinities = []*pb.Affinity{{Weight: 10}, nil}
				s.Training.Speeds = append(s.Training.Speeds, nil)
				s.Worker.Constraints = append(s.Worker.Constraints, nil)
				s.Worker.Resources.Devices[0].Affinities = []*pb.Affinity{nil}
				s.ParameterServer = &pb.Role{Resources: &pb.Resources{Devices: []*pb.RequestedDevice{nil}}}
			},
			want: []string{
				`jobs[0] ("a"): spec.constraints[0]: nil element`,
				`jobs[0] ("a"): spec.affinities[1]: nil element`,
				`jobs[0] ("a"): spec.training.speeds[1]: nil element`,
				`jobs[0] ("a"): spec.worker.constraints[1]: nil element`,
				`jobs[0] ("a"): spec.worker.resources.devices[0].affinities[0]: nil element`,
				`jobs[0] ("a"): spec.parameter_server.resources.devices[0]: nil element`,
			},
		},
		{
			name: "nil node tasks of the current placement",
			break_: func(p *pb.PlanRequest) {
				p.Jobs[0].Current.Nodes = append(p.Jobs[0].Current.Nodes, nil)
				p.Jobs[0].Current.JobId = ""
			},
			want: []string{`jobs[0] ("a"): current.nodes[1]: nil element`, `jobs[0] ("a"): current.job_id: is required`},
		},
		{
			name: "nil and non-finite progress points",
			break_: func(p *pb.PlanRequest) {
				p.Jobs[0].Progress = []*pb.ProgressPoint{{Time: 1, Loss: 0.5}, nil, {Time: 3, Loss: math.NaN()}, {Time: 4, Loss: math.Inf(1)}}
			},
			want: []string{`jobs[0] ("a"): progress[1]: nil element`, `jobs[0] ("a"): progress[2]: loss NaN is not a finite number`, `jobs[0] ("a"): progress[3]: loss +Inf is not a finite number`},
		},
		{
			name: "problems of several messages",
			break_: func(p *pb.PlanRequest) {
				p.Nodes[0].Devices[0].Attributes["memory"].Value = nil
				p.Jobs = append(p.Jobs, &pb.Job{}, p.Jobs[0])
				p.Jobs[0].Speed.Theta = make([]float64, 6)
			},
			want: []string{
				`nodes[0] ("n-0"): devices[0].attributes["memory"]: no value set`,
				`jobs[0] ("a"): speed model has 6 coefficients, at most 5`,
				`jobs[1]: no spec`,
				`jobs[2] ("a"): speed model has 6 coefficients, at most 5`,
			},
		},
		{
			name: "counts too large for an int",
			break_: func(p *pb.PlanRequest) {
				p.Nodes[0].Cpu = math.MaxInt64
				p.Jobs[0].Spec.Worker.Resources.Devices[0].Count = 1 << 40
				p.Jobs[0].Spec.Elastic.Workers.Max = -1 << 40
				p.Jobs[0].Current.Nodes[0].Workers = 1 << 33
			},
			want: []string{
				`nodes[0] ("n-0"): cpu: 9223372036854775807 does not fit an int`,
				`jobs[0] ("a"): spec.worker.resources.devices[0].count: 1099511627776 does not fit an int`,
				`jobs[0] ("a"): spec.elastic.workers.max: -1099511627776 does not fit an int`,
				`jobs[0] ("a"): current.nodes[0].workers: 8589934592 does not fit an int`,
			},
			only32: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.only32 && strconv.IntSize != 32 {
				t.Skip("every int64 fits an int here")
			}
			p := validRequest(t)
			_, err := RequestFromProto(p)
			must.NoError(t, err)
			tc.break_(p)
			req, err := RequestFromProto(p)
			must.Nil(t, req)
			must.Error(t, err)
			for _, want := range tc.want {
				must.StrContains(t, err.Error(), want)
			}
		})
	}
	t.Run("nil request", func(t *testing.T) {
		_, err := RequestFromProto(nil)
		must.ErrorContains(t, err, "no request")
	})
}

func TestDecisionFromProto_Malformed(t *testing.T) {
	valid := func() *pb.PlanResponse {
		return DecisionToProto(&planner.Decision{Placements: []*structs.Placement{
			{Namespace: "default", JobID: "a", NumWorkers: 2, Nodes: []*structs.NodeTasks{{NodeID: "n-0", Workers: 2}}, Reason: "fits"},
		}})
	}
	cases := map[string]struct {
		break_ func(p *pb.PlanResponse)
		want   []string
	}{
		"nil placement": {
			break_: func(p *pb.PlanResponse) { p.Placements = append(p.Placements, nil) },
			want:   []string{"placements[1]: nil element"},
		},
		"placement without job": {
			break_: func(p *pb.PlanResponse) { p.Placements[0].JobId = "" },
			want:   []string{"placements[0]: job_id: is required"},
		},
		"nil node tasks": {
			break_: func(p *pb.PlanResponse) { p.Placements[0].Nodes = []*pb.NodeTasks{nil, {NodeId: "n-1"}, nil} },
			want:   []string{`placements[0] ("a"): nodes[0]: nil element`, `placements[0] ("a"): nodes[2]: nil element`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := valid()
			_, err := DecisionFromProto(p)
			must.NoError(t, err)
			tc.break_(p)
			dec, err := DecisionFromProto(p)
			must.Nil(t, dec)
			must.Error(t, err)
			for _, want := range tc.want {
				must.StrContains(t, err.Error(), want)
			}
		})
	}
	t.Run("nil response", func(t *testing.T) {
		_, err := DecisionFromProto(nil)
		must.ErrorContains(t, err, "no response")
	})
}

// FuzzRequestFromProto checks that any bytes that decode as a PlanRequest
// convert without panicking, and that whatever converts comes back the
// same from its own wire form.
func FuzzRequestFromProto(f *testing.F) {
	for seed := range uint64(5) {
		b, err := proto.Marshal(RequestToProto(planner.RandomRequest(rand.New(rand.NewPCG(seed, 9)))))
		must.NoError(f, err)
		f.Add(b)
	}
	b, err := proto.Marshal(validRequest(f))
	must.NoError(f, err)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pb.PlanRequest
		if proto.Unmarshal(b, &p) != nil {
			return
		}
		req, err := RequestFromProto(&p)
		if err != nil {
			return
		}
		again, err := RequestFromProto(wire(t, RequestToProto(req), &pb.PlanRequest{}))
		must.NoError(t, err)
		must.Eq(t, req, again, equateEmpty, must.Cmp(cmpopts.EquateNaNs()))
	})
}

// BenchmarkRequestRoundTrip measures a plan request of 1,000 jobs on 2,000
// nodes from the host's Request to the plugin's: RequestToProto,
// proto.Marshal, proto.Unmarshal and RequestFromProto.
func BenchmarkRequestRoundTrip(b *testing.B) {
	req := planner.LargeRequest(b, 2000, 1000)
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		data, err := proto.Marshal(RequestToProto(req))
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
		var p pb.PlanRequest
		if err := proto.Unmarshal(data, &p); err != nil {
			b.Fatal(err)
		}
		if _, err := RequestFromProto(&p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "wire-B/op")
}

func ptr[T any](v T) *T { return &v }

// TestDecision_RoundTripSizes checks that per-task sizes and actions cross
// the wire, and that a zero size stays unset there, as a plugin that
// predates sizes sends it.
func TestDecision_RoundTripSizes(t *testing.T) {
	dec := &planner.Decision{Placements: []*structs.Placement{{
		JobID: "a", NumPS: 1, NumWorkers: 3,
		Nodes: []*structs.NodeTasks{
			{NodeID: "n1", PS: 1, Workers: 1},
			{NodeID: "n1", Workers: 2, WorkerSize: structs.TaskSize{CPU: 2500, MemoryMB: 4096}},
		},
		Actions: []*structs.TaskAction{{
			Kind: structs.ActionOOMResized, Role: structs.RoleWorker, Rank: 2, NodeID: "n1",
			Reason: "killed for memory", Details: map[string]string{"from": "2048", "to": "4096"},
		}},
	}}}
	msg := DecisionToProto(dec)
	must.Nil(t, msg.Placements[0].Nodes[0].WorkerSize)
	must.Eq(t, int64(4096), msg.Placements[0].Nodes[1].WorkerSize.MemoryMb)
	got, err := DecisionFromProto(wire(t, msg, &pb.PlanResponse{}))
	must.NoError(t, err)
	must.Eq(t, dec, got)

	msg.Placements[0].Actions = append(msg.Placements[0].Actions, nil)
	msg.Placements[0].Nodes[1].WorkerSize.Cpu = math.MaxInt64
	_, err = DecisionFromProto(msg)
	must.ErrorContains(t, err, "actions[1]: nil element")
	if strconv.IntSize == 32 {
		must.ErrorContains(t, err, "worker_size.cpu")
	}
}

// TestRequestFromProto_Usage checks that measured usage is bounded and
// checked where it enters from the wire.
func TestRequestFromProto_Usage(t *testing.T) {
	msg := validRequest(t)
	msg.Jobs[0].Since = 42
	msg.Jobs[0].Usage = &pb.JobUsage{JobId: "a", Tasks: []*pb.TaskUsage{{Role: "worker", CpuMhz: 1200, MemoryMb: 300, Source: "sim"}},
		ByShape: []*pb.ShapeUsage{{NumPs: 1, NumWorkers: 1, WorkerCpuMhz: 1200, PsCpuMhz: 800, Measurements: 2}}}
	req, err := RequestFromProto(wire(t, msg, &pb.PlanRequest{}))
	must.NoError(t, err)
	must.Eq(t, int64(42), req.Jobs[0].Since)
	must.Eq(t, 800, req.Jobs[0].Usage.Shape(structs.Shape{PS: 1, Workers: 1}).PSCPUMHz)
	must.Eq(t, 1200, req.Jobs[0].Usage.Tasks[0].CPUMHz)

	msg.Jobs[0].Usage.Tasks = append(msg.Jobs[0].Usage.Tasks, nil, &pb.TaskUsage{CpuMhz: math.NaN()})
	msg.Jobs[0].Usage.ByShape[0].PsCpuMhz = -1
	_, err = RequestFromProto(msg)
	must.ErrorContains(t, err, "usage.tasks[1]: nil element")
	must.ErrorContains(t, err, "usage.tasks[2]: NaN is not a finite number at least 0")
	must.ErrorContains(t, err, "usage.by_shape[0]: -1 is not a finite number at least 0")

	msg.Jobs[0].Usage.Tasks = make([]*pb.TaskUsage, structs.MaxUsageTasks+1)
	_, err = RequestFromProto(msg)
	must.ErrorContains(t, err, "usage.tasks: 513 tasks, more than the 512 allowed")
}
