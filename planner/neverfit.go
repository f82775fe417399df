package planner

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/structs"
)

// Nomad's words for the nodes its feasibility checks filter (its
// scheduler/feasible FilterConstraintDrivers and FilterConstraintDevices):
// a node without the task's driver, and one without enough healthy devices
// matching a request, even when none is in use.
const (
	FilterMissingDrivers = "missing drivers"
	FilterMissingDevices = "missing devices"
)

// ErrNeverFits is wrapped by NeverFits's error: a job that no node could run
// even with nothing else on it.
var ErrNeverFits = errors.New("job can never be placed")

// NeverFits reports, as an error wrapping ErrNeverFits, a job one of whose
// roles could not run a single task on any of nodes even if the node ran
// nothing else: every node is filtered (datacenter, node pool,
// a constraint, FilterMissingDrivers, or FilterMissingDevices when its
// healthy devices matching a request are fewer than the request's count)
// or has less CPU or memory in total than one task needs. Such a job would
// wait for ever; capacity that others use is not its problem, so it is
// judged on empty nodes, one task at a time.
//
// Every node the cluster knows counts, ready or not: a node down or
// drained now may come back, and a job it could run is not refused. It
// returns nil when the job fits somewhere, and when no node is known yet:
// a job is not refused on an inventory that is empty for now. The message
// lists the nodes evaluated and why each was left out, in the words Nomad's
// placement metrics use: `constraint "missing devices" filtered 2 nodes`.
func NeverFits(nodes []*structs.Node, job *structs.Job) error {
	return NewCluster(nodes).NeverFits(job)
}

// NeverFits is the package's NeverFits on the cluster's nodes, which
// must be free of tasks (a fresh NewCluster). It does not change the
// cluster's capacity, so one cluster checks many jobs: building it is
// most of the cost of one check on a large inventory.
func (c *Cluster) NeverFits(job *structs.Job) error {
	nodes := c.Nodes
	if len(nodes) == 0 || job == nil || job.Worker == nil {
		return nil
	}
	j := &Job{Job: job}
	tasks := c.JobTasks(j)
	roles := []struct {
		name string
		spec *structs.Role
		t    *Task
	}{{structs.RoleWorker, job.Worker, tasks.Worker}}
	if tasks.PS != nil {
		roles = append(roles, struct {
			name string
			spec *structs.Role
			t    *Task
		}{structs.RolePS, j.PSRole(), tasks.PS})
	}
	for _, r := range roles {
		m := &structs.PlacementMetric{Role: r.name, NodesEvaluated: len(nodes)}
		fits := false
		for i := range nodes {
			if why := c.emptyNodeShort(i, j.Job, r.spec, r.t); why != "" {
				if why == "cpu" || why == "memory" {
					increment(&m.DimensionExhausted, why)
				} else {
					increment(&m.ConstraintFiltered, why)
				}
				continue
			}
			fits = true
			break
		}
		if !fits {
			return fmt.Errorf("%w: no node can run a %s even with nothing else on it (%s)", ErrNeverFits, r.name, neverFitDetails(m, r.spec))
		}
	}
	return nil
}

// emptyNodeShort says why one task t of role spec cannot run on node i of a
// fresh cluster (every node empty), "" when it can: the filter (as
// filteredBy names it, but FilterMissingDevices for any device request
// that no device group satisfies, as Nomad's DeviceChecker says), or the
// dimension "cpu" or "memory".
func (c *Cluster) emptyNodeShort(i int, job *structs.Job, spec *structs.Role, t *Task) string {
	if !c.Feasible(i, t) {
		why := c.filteredBy(i, job, spec)
		if strings.HasPrefix(why, "device ") {
			return FilterMissingDevices
		}
		return why
	}
	f := c.free[i]
	switch {
	case f.cpu < t.CPU:
		return "cpu"
	case f.mem < t.MemoryMB:
		return "memory"
	}
	if len(t.Devices) > 0 {
		var scratch [8]int
		if c.shortDevice(i, t, 1, append(scratch[:0], f.devs...)) >= 0 {
			return FilterMissingDevices
		}
	}
	return ""
}

// neverFitDetails renders a NeverFits metric as Nomad's command line does
// an allocation metric, on one line: the nodes evaluated, each filter with
// its count, each exhausted dimension with its count, and for missing
// devices what the role asks for.
func neverFitDetails(m *structs.PlacementMetric, spec *structs.Role) string {
	parts := []string{structs.Plural(m.NodesEvaluated, "node") + " evaluated"}
	for _, k := range byCountKeys(m.ConstraintFiltered) {
		p := fmt.Sprintf("constraint %q filtered %s", k, structs.Plural(m.ConstraintFiltered[k], "node"))
		switch k {
		case FilterMissingDrivers:
			p += fmt.Sprintf(": no task driver %q", spec.Driver)
		case FilterMissingDevices:
			var want []string
			for _, d := range spec.Resources.Devices {
				want = append(want, fmt.Sprintf("%d %s", d.Count, d.Name))
			}
			p += ": a task asks for " + strings.Join(want, " and ")
		}
		parts = append(parts, p)
	}
	for _, k := range byCountKeys(m.DimensionExhausted) {
		parts = append(parts, fmt.Sprintf("dimension %q exhausted on %s", k, structs.Plural(m.DimensionExhausted[k], "node")))
	}
	return strings.Join(parts, "; ")
}

// byCountKeys returns the keys of counts, largest count first, then by
// name, so that messages read the same every time.
func byCountKeys(counts map[string]int) []string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	return keys
}
