package planner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Aggregate is the cluster's total free capacity, for algorithms that, like
// Optimus, allocate against the cluster as a whole before placing tasks on
// nodes. It is not safe for concurrent use.
type Aggregate struct {
	cpu, mem   int
	dev        map[string]int // by device type
	totCPU     float64
	totMem     float64
	totDevices map[string]float64
}

// NewAggregate sums c's free capacity.
func NewAggregate(c *Cluster) *Aggregate {
	a := &Aggregate{dev: map[string]int{}, totDevices: map[string]float64{}}
	for i, n := range c.Nodes {
		cpu, mem, _ := c.Free(i)
		a.cpu += cpu
		a.mem += mem
		free := c.FreeDevices(i)
		for g, d := range n.Devices {
			a.dev[d.Type] += free[g]
		}
	}
	a.totCPU, a.totMem = float64(a.cpu), float64(a.mem)
	for k, v := range a.dev {
		a.totDevices[k] = float64(v)
	}
	return a
}

// DominantShare is the largest share of any resource one task t takes, +Inf
// when the cluster lacks a device type t needs.
func (a *Aggregate) DominantShare(t *Task) float64 {
	d := max(float64(t.CPU)/a.totCPU, float64(t.MemoryMB)/a.totMem)
	for typ, n := range t.DeviceCounts {
		tot := a.totDevices[typ]
		if tot == 0 {
			return math.Inf(1)
		}
		d = max(d, float64(n)/tot)
	}
	return d
}

// Fits reports whether na tasks ta and nb tasks tb fit the aggregate
// together; a task may be nil when its count is 0.
func (a *Aggregate) Fits(ta *Task, na int, tb *Task, nb int) bool {
	cpu, mem := 0, 0
	if na > 0 {
		cpu, mem = na*ta.CPU, na*ta.MemoryMB
	}
	if nb > 0 {
		cpu, mem = cpu+nb*tb.CPU, mem+nb*tb.MemoryMB
	}
	return cpu <= a.cpu && mem <= a.mem && a.devicesFit(ta, na, tb, nb) && a.devicesFit(tb, nb, ta, na)
}

// devicesFit checks the device types x requests, counting what y requests of
// the same types.
func (a *Aggregate) devicesFit(x *Task, nx int, y *Task, ny int) bool {
	if nx <= 0 {
		return true
	}
	for typ, n := range x.DeviceCounts {
		need := nx * n
		if ny > 0 {
			need += ny * y.DeviceCounts[typ]
		}
		if need > a.dev[typ] {
			return false
		}
	}
	return true
}

// Shortfall says, for people, what the aggregate lacks for na tasks ta and
// nb tasks tb together, e.g. "they need 5 gpu, 4 free of 4"; empty when
// they fit.
func (a *Aggregate) Shortfall(ta *Task, na int, tb *Task, nb int) string {
	need := map[string]int{}
	add := func(t *Task, n int) {
		if n <= 0 {
			return
		}
		need["MHz CPU"] += n * t.CPU
		need["MB memory"] += n * t.MemoryMB
		for typ, c := range t.DeviceCounts {
			need[typ] += n * c
		}
	}
	add(ta, na)
	add(tb, nb)
	var short []string
	for _, k := range slices.Sorted(maps.Keys(need)) {
		free, total := a.dev[k], a.totDevices[k]
		switch k {
		case "MHz CPU":
			free, total = a.cpu, a.totCPU
		case "MB memory":
			free, total = a.mem, a.totMem
		}
		if need[k] > free {
			short = append(short, fmt.Sprintf("%d %s, %d free of %.0f", need[k], k, free, total))
		}
	}
	if len(short) == 0 {
		return ""
	}
	return "they need " + strings.Join(short, "; ")
}

// Release gives back n tasks t taken before.
func (a *Aggregate) Release(t *Task, n int) { a.Take(t, -n) }

// Take takes n tasks t from the aggregate; a negative n gives them back.
func (a *Aggregate) Take(t *Task, n int) {
	if n == 0 {
		return
	}
	a.cpu -= n * t.CPU
	a.mem -= n * t.MemoryMB
	for typ, c := range t.DeviceCounts {
		a.dev[typ] -= n * c
	}
}
