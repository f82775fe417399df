package planner

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
)

// Harness builds planner requests for tests and checks every decision
// against CheckDecision. Create it with NewHarness.
type Harness struct {
	t     testing.TB
	Nodes []*structs.Node
	Jobs  []*Job
}

// NewHarness returns an empty harness for t.
func NewHarness(t testing.TB) *Harness { return &Harness{t: t} }

// AddNodes adds n ready nodes named prefix-0, prefix-1, … with cpu MHz,
// memory MB and gpus "nvidia/gpu/Tesla V100" instances of 16 GiB each.
func (h *Harness) AddNodes(prefix string, n, cpu, memoryMB, gpus int) []*structs.Node {
	var out []*structs.Node
	for i := range n {
		node := &structs.Node{
			ID: fmt.Sprintf("%s-%d", prefix, i), Name: fmt.Sprintf("%s-%d", prefix, i),
			Datacenter: "dc1", Status: structs.NodeStatusReady, Eligible: true,
			CPU: cpu, MemoryMB: memoryMB,
			Attributes: map[string]string{"kernel.name": "linux"},
		}
		if gpus > 0 {
			node.NodeClass = "gpu"
			d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "Tesla V100",
				Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute("16 GiB")}}
			for g := range gpus {
				d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", node.ID, g), Healthy: true})
			}
			node.Devices = []*structs.NodeDeviceResource{d}
		}
		out = append(out, node)
	}
	h.Nodes = append(h.Nodes, out...)
	return out
}

// AddJob adds job j, canonicalized and validated, with the given fitted
// speed model (nil for none), and returns its view for further setup.
func (h *Harness) AddJob(j *structs.Job, speed *model.Speed) *Job {
	h.t.Helper()
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		h.t.Fatalf("harness: job %q is invalid: %v", j.ID, err)
	}
	v := &Job{Job: j, Speed: speed}
	h.Jobs = append(h.Jobs, v)
	return v
}

// Request returns the request for the harness's nodes and jobs.
func (h *Harness) Request() *Request { return &Request{Nodes: h.Nodes, Jobs: h.Jobs} }

// Plan runs alg, fails the test if it errs or breaks CheckDecision, and
// returns the placements by job ID.
func (h *Harness) Plan(alg Algorithm) map[string]*structs.Placement {
	h.t.Helper()
	req := h.Request()
	dec, err := alg.Plan(req)
	if err != nil {
		h.t.Fatalf("%s: plan: %v", alg.Name(), err)
	}
	if err := CheckDecision(req, dec); err != nil {
		h.t.Fatalf("%s: invalid decision: %v", alg.Name(), err)
	}
	out := make(map[string]*structs.Placement, len(dec.Placements))
	for _, p := range dec.Placements {
		out[p.JobID] = p
	}
	return out
}

// MockJob returns a valid CPU-only PS job with the given bounds, 1000 MHz
// and 1024 MB per task, and 100 steps per epoch.
func MockJob(id string, ps, workers structs.Bounds) *structs.Job {
	j := &structs.Job{
		ID: id,
		Training: &structs.Training{
			Architecture: structs.ArchitecturePS, Mode: structs.ModeAsync,
			GlobalBatchSize: 64, StepsPerEpoch: 100,
			Convergence: &structs.Convergence{MaxEpochs: 10},
		},
		Elastic: &structs.Elastic{Workers: workers, ParameterServers: &ps},
		Worker:  &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024}},
	}
	j.Canonicalize()
	return j
}

// MockSpeed returns an async speed model that scales well to a few dozen
// workers: f(p,w) = w / (1 + 0.2·w/p + 0.01·w + 0.02·p).
func MockSpeed() *model.Speed {
	return &model.Speed{Kind: model.SpeedAsync, Theta: [5]float64{1, 0.2, 0.01, 0.02}}
}
