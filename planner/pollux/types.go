package pollux

import (
	"cmp"
	"maps"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// gpu is the device type a job's GPUs are counted in.
const gpu = "gpu"

// mixedTypes reports whether the request's nodes hold GPUs of more than
// one type (structs.Node.GPUType).
func (pr *problem) mixedTypes() bool {
	first := ""
	for _, n := range pr.req.Nodes {
		t := n.GPUType()
		if t == "" {
			continue
		}
		if first == "" {
			first = t
		} else if t != first {
			return true
		}
	}
	return false
}

// keepOneType makes every job of best that the search spread over GPUs of
// several types run on one: the type that holds most of its GPUs, the
// faster for the job on a tie (fasterType), and drops its workers on the
// others, which stay idle this round. This is the heuristic Sia's
// evaluation applies to Pollux on a mixed cluster (§4.3, "Fixing
// mixed-GPU allocations from Pollux"; artifact cluster_unaware.py
// fix_allocations_by_dropping), per job, after the search, which sees the
// GPUs as one type. A job left below its minimum waits (place).
func (pr *problem) keepOneType(best *individual) {
	for j, jb := range pr.jobs {
		per := jb.tasks.Worker.DeviceCounts[gpu]
		o, n := pr.off[j], int(best.n[j])
		if per == 0 || n < 2 {
			continue
		}
		held := map[string]int{}
		for e := range n {
			held[pr.req.Nodes[best.node[o+e]].GPUType()] += int(best.count[o+e]) * per
		}
		if len(held) < 2 {
			continue
		}
		keep := ""
		for _, t := range slices.Sorted(maps.Keys(held)) {
			if keep == "" || held[t] > held[keep] || held[t] == held[keep] && fasterType(jb.view, t, keep) {
				keep = t
			}
		}
		k := 0
		for e := range n {
			if pr.req.Nodes[best.node[o+e]].GPUType() == keep {
				best.node[o+k], best.count[o+k] = best.node[o+e], best.count[o+e]
				k++
			}
		}
		best.n[j] = int32(k)
	}
}

// fasterType reports whether job v steps faster on one GPU of type a than
// of type b by its throughput models per type (planner.Job.PerfByType),
// at its reference batch: the artifact ranks types by hardware (a100 >
// quad > rtx > t4), which a Caravan node does not declare. Without a
// model of both, the type named first wins.
func fasterType(v *planner.Job, a, b string) bool {
	fa, fb := v.PerfByType[a], v.PerfByType[b]
	if fa == nil || fb == nil {
		return a < b
	}
	local := float64(max(v.Job.Training.GlobalBatchSize, 1))
	ta, tb := fa.Params.StepTime(1, 1, local, 0), fb.Params.StepTime(1, 1, local, 0)
	return cmp.Or(cmp.Compare(ta, tb), cmp.Compare(a, b)) < 0
}

// typePreference returns the GPU devices of the request's nodes, one per
// GPU type, the faster type for job v first (fasterType).
func (pr *problem) typePreference(v *planner.Job) []structs.DeviceID {
	seen := map[string]structs.DeviceID{}
	for _, n := range pr.req.Nodes {
		for _, d := range n.Devices {
			if d.Type == gpu && d.HealthyCount() > 0 && d.Name == n.GPUType() {
				seen[d.Name] = d.ID()
				break
			}
		}
	}
	types := slices.Sorted(maps.Keys(seen))
	slices.SortStableFunc(types, func(a, b string) int {
		switch {
		case fasterType(v, a, b):
			return -1
		case fasterType(v, b, a):
			return 1
		}
		return 0
	})
	out := make([]structs.DeviceID, len(types))
	for k, t := range types {
		out[k] = seen[t]
	}
	return out
}

// onType returns a copy of job v whose GPU requests name GPU device t
// ("nvidia/gpu/Tesla T4"), so that its tasks may run on nodes of that
// type only.
func onType(v *planner.Job, t structs.DeviceID) *planner.Job {
	j := v.Job.Copy()
	for _, r := range []*structs.Role{j.Worker, j.ParameterServer} {
		if r == nil || r.Resources == nil {
			continue
		}
		for _, d := range r.Resources.Devices {
			if id, err := structs.ParseDeviceID(d.Name); err == nil && id.Matches(t) {
				d.Name = t.String()
			}
		}
	}
	cp := *v
	cp.Job = j
	return &cp
}
