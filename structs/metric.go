package structs

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// PlacementMetric says why a job's minimum could not be placed, as Nomad's
// AllocMetric says it for an allocation: the minimum is placed one task at
// a time, first fit in node order, and the metric describes the nodes as
// the first task that found no room saw them. A node is counted once:
// filtered by the first constraint it fails, or exhausted on the first
// dimension short of room.
type PlacementMetric struct {
	// Minimum is the shape that could not be placed; Placed is how much of
	// it found room before the task that did not.
	Minimum Shape
	Placed  Shape
	// Role is the role of the task that found no room: RoleWorker or
	// RolePS.
	Role string
	// NodesEvaluated is how many nodes the planner considered.
	NodesEvaluated int
	// ConstraintFiltered counts the nodes where the task may not run, by
	// the first constraint each failed: a job or role constraint as
	// Nomad renders it ("${attr.kernel.name} = linux"), a device request's
	// ("device nvidia/gpu: ${device.attr.memory} >= 32 GiB", "device
	// nvidia/gpu: missing"), "distinct_hosts", "datacenter not in [dc2]"
	// or "node pool != gpu".
	ConstraintFiltered map[string]int `json:",omitempty"`
	// DimensionExhausted counts the nodes where the task may run but
	// finds no room, by the first dimension short: "cpu", "memory", or a
	// device type ("gpu").
	DimensionExhausted map[string]int `json:",omitempty"`
}

// Copy returns a deep copy of m; nil stays nil.
func (m *PlacementMetric) Copy() *PlacementMetric {
	if m == nil {
		return nil
	}
	c := *m
	c.ConstraintFiltered = maps.Clone(m.ConstraintFiltered)
	c.DimensionExhausted = maps.Clone(m.DimensionExhausted)
	return &c
}

// Summary is the first line of the explanation: "waiting for capacity:
// the minimum of 0 ps and 1 worker does not fit: no node has room for a
// worker". A job that no node could run even empty is refused when it is
// registered (planner.NeverFits), so a paused job's metric only ever
// means that it waits for capacity others use, and says so first.
func (m *PlacementMetric) Summary() string {
	var b strings.Builder
	b.WriteString("waiting for capacity: the minimum of ")
	b.WriteString(m.Minimum.String())
	b.WriteString(" does not fit: ")
	if m.Placed.Tasks() > 0 {
		b.WriteString("room for ")
		b.WriteString(m.Placed.String())
		b.WriteString(", no node has room for another ")
	} else {
		b.WriteString("no node has room for a ")
	}
	b.WriteString(m.Role)
	return b.String()
}

// Details are the lines after the summary: the nodes evaluated, then the
// constraints that filtered nodes and the dimensions exhausted, each by
// count (most first) and then by name, so that they read the same every
// time.
func (m *PlacementMetric) Details() []string {
	out := make([]string, 0, 1+len(m.ConstraintFiltered)+len(m.DimensionExhausted))
	out = append(out, Plural(m.NodesEvaluated, "node")+" evaluated")
	for _, k := range byCount(m.ConstraintFiltered) {
		out = append(out, k+" filtered "+strconv.Itoa(m.ConstraintFiltered[k])+" of "+Plural(m.NodesEvaluated, "node"))
	}
	for _, k := range byCount(m.DimensionExhausted) {
		out = append(out, k+" exhausted on "+Plural(m.DimensionExhausted[k], "node"))
	}
	return out
}

// String renders the explanation on one line, for a placement's reason:
// the summary and the details separated by "; ".
func (m *PlacementMetric) String() string {
	return m.Summary() + "; " + strings.Join(m.Details(), "; ")
}

// byCount returns the keys of counts, largest count first, then by name.
func byCount(counts map[string]int) []string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	return keys
}
