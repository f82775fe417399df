package planner

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/planner/feasible"
	"github.com/caravan-sched/caravan/structs"
)

// Cluster is the free capacity of a request's nodes, updated as tasks are
// placed, with Nomad's device semantics: each task takes its device count
// from one device group that matches its request. Feasibility (constraints,
// datacenters, node pool, device matching) is computed once per job role and
// node class: nodes whose attributes, metadata and devices are alike share
// the answer, as Nomad caches feasibility per computed node class.
//
// A Cluster is not safe for concurrent use. Clone it to try alternatives.
type Cluster struct {
	Nodes []*structs.Node
	free  []nodeFree
	// class maps a node to its class; classes holds one node per class.
	class   []int
	classes []int
	index   map[string]int
	checker *feasible.Checker
}

type nodeFree struct {
	cpu, mem int
	devs     []int // free instances per device group, in node order
}

// NewCluster returns the free capacity of nodes: every node's full capacity,
// with unhealthy device instances left out.
func NewCluster(nodes []*structs.Node) *Cluster {
	c := &Cluster{
		Nodes:   nodes,
		free:    make([]nodeFree, len(nodes)),
		class:   make([]int, len(nodes)),
		index:   make(map[string]int, len(nodes)),
		checker: feasible.New(),
	}
	byKey := map[string]int{}
	for i, n := range nodes {
		c.index[n.ID] = i
		f := nodeFree{cpu: n.CPU, mem: n.MemoryMB}
		if len(n.Devices) > 0 {
			f.devs = make([]int, len(n.Devices))
			for g, d := range n.Devices {
				f.devs[g] = d.HealthyCount()
			}
		}
		c.free[i] = f
		key := classKey(n)
		id, ok := byKey[key]
		if !ok {
			id = len(c.classes)
			byKey[key] = id
			c.classes = append(c.classes, i)
		}
		c.class[i] = id
	}
	return c
}

// classKey is what decides feasibility for a node, except its identity.
func classKey(n *structs.Node) string {
	var b strings.Builder
	b.WriteString(n.Datacenter + "\x00" + n.NodeClass + "\x00" + n.NodePool + "\x00")
	for _, m := range []map[string]string{n.Attributes, n.Meta} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteString(k + "=" + m[k] + "\x00")
		}
		b.WriteString("\x01")
	}
	for _, d := range n.Devices {
		b.WriteString(d.ID().String() + "\x00")
		keys := make([]string, 0, len(d.Attributes))
		for k := range d.Attributes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteString(k + "=" + d.Attributes[k].GoString() + "\x00")
		}
	}
	return b.String()
}

// NodeIndex returns the index of the node with the given ID.
func (c *Cluster) NodeIndex(id string) (int, bool) {
	i, ok := c.index[id]
	return i, ok
}

// Clone returns an independent copy of the free capacity.
func (c *Cluster) Clone() *Cluster {
	out := *c
	out.free = make([]nodeFree, len(c.free))
	for i, f := range c.free {
		out.free[i] = nodeFree{cpu: f.cpu, mem: f.mem, devs: slices.Clone(f.devs)}
	}
	return &out
}

// Task is what one task of a job's role needs and where it may run. Build
// it once per job and role with NewTask.
type Task struct {
	CPU, MemoryMB int
	Devices       []*structs.RequestedDevice
	// DeviceCounts sums the device counts by device type ("gpu"), for
	// algorithms that reason about aggregate capacity.
	DeviceCounts map[string]int

	// DistinctHosts allows at most one task of this role per node.
	DistinctHosts bool

	constraints []*structs.Constraint
	datacenters []string
	nodePool    string
	perNode     bool // constraints name node identities: no class caching
	classOK     []int8
	// groups[class][r] lists the device groups of the class's nodes that
	// match device request r.
	groups [][][]int
}

// NewTask returns the task of role r of job j, feasible on the cluster's
// nodes as the job's and role's constraints allow.
func (c *Cluster) NewTask(j *structs.Job, r *structs.Role) *Task {
	t := &Task{
		CPU:         r.Resources.CPU,
		MemoryMB:    r.Resources.MemoryMB,
		Devices:     r.Resources.Devices,
		datacenters: j.Datacenters,
		nodePool:    j.NodePool,
		classOK:     make([]int8, len(c.classes)),
		groups:      make([][][]int, len(c.classes)),
	}
	t.constraints = append(slices.Clone(j.Constraints), r.Constraints...)
	for _, con := range t.constraints {
		if con.Operand == structs.OpDistinctHosts {
			t.DistinctHosts = true
		}
		if feasible.UsesNodeIdentity(con) {
			t.perNode = true
		}
	}
	if len(t.Devices) > 0 {
		t.DeviceCounts = map[string]int{}
		for _, d := range t.Devices {
			id, _ := structs.ParseDeviceID(d.Name)
			t.DeviceCounts[id.Type] += d.Count
		}
	}
	return t
}

// Feasible reports whether node i may run the task at all, ignoring how
// much is free.
func (c *Cluster) Feasible(i int, t *Task) bool {
	cl := c.class[i]
	if t.perNode {
		return c.feasibleNode(i, t, cl)
	}
	if t.classOK[cl] == 0 {
		t.classOK[cl] = -1
		if c.feasibleNode(c.classes[cl], t, cl) {
			t.classOK[cl] = 1
		}
	}
	return t.classOK[cl] == 1
}

func (c *Cluster) feasibleNode(i int, t *Task, cl int) bool {
	n := c.Nodes[i]
	if !matchDatacenter(t.datacenters, n.Datacenter) || !matchPool(t.nodePool, n.NodePool) {
		return false
	}
	if !c.checker.Node(n, t.constraints) {
		return false
	}
	if t.groups[cl] == nil && len(t.Devices) > 0 {
		t.groups[cl] = make([][]int, len(t.Devices))
		for r, req := range t.Devices {
			for g, d := range n.Devices {
				if c.checker.DeviceGroup(d, req) {
					t.groups[cl][r] = append(t.groups[cl][r], g)
				}
			}
		}
	}
	for r := range t.Devices {
		if len(t.groups[cl][r]) == 0 {
			return false
		}
	}
	return true
}

func matchDatacenter(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, dc); ok {
			return true
		}
	}
	return false
}

// matchPool applies Nomad's node pool rules: a job without a pool runs in
// "default", a job in "all" runs anywhere, and a node without a pool is in
// "default".
func matchPool(jobPool, nodePool string) bool {
	if jobPool == "all" {
		return true
	}
	if jobPool == "" {
		jobPool = "default"
	}
	if nodePool == "" {
		nodePool = "default"
	}
	return jobPool == nodePool
}

// Fits reports whether n more tasks t fit on node i now.
func (c *Cluster) Fits(i int, t *Task, n int) bool {
	if n <= 0 {
		return true
	}
	f := &c.free[i]
	if f.cpu < n*t.CPU || f.mem < n*t.MemoryMB || !c.Feasible(i, t) {
		return false
	}
	if len(t.Devices) == 0 {
		return true
	}
	var scratch [8]int
	devs := append(scratch[:0], f.devs...)
	return c.takeDevices(i, t, n, devs)
}

// FitsPair reports whether na tasks a and nb tasks b fit on node i together,
// as a job's parameter servers and workers on one node must.
func (c *Cluster) FitsPair(i int, a *Task, na int, b *Task, nb int) bool {
	if na <= 0 {
		return c.Fits(i, b, nb)
	}
	if nb <= 0 {
		return c.Fits(i, a, na)
	}
	f := &c.free[i]
	if f.cpu < na*a.CPU+nb*b.CPU || f.mem < na*a.MemoryMB+nb*b.MemoryMB || !c.Feasible(i, a) || !c.Feasible(i, b) {
		return false
	}
	if len(a.Devices) == 0 && len(b.Devices) == 0 {
		return true
	}
	var scratch [8]int
	devs := append(scratch[:0], f.devs...)
	return c.takeDevices(i, a, na, devs) && c.takeDevices(i, b, nb, devs)
}

// Take places n tasks t on node i. The caller must have checked that they
// fit (Fits, FitsPair); Take panics on devices that are not there.
func (c *Cluster) Take(i int, t *Task, n int) {
	f := &c.free[i]
	f.cpu -= n * t.CPU
	f.mem -= n * t.MemoryMB
	if len(t.Devices) > 0 && (!c.Feasible(i, t) || !c.takeDevices(i, t, n, f.devs)) {
		panic(fmt.Sprintf("planner: Take on node %s without room for the devices", c.Nodes[i].ID))
	}
}

// takeDevices assigns each of n tasks its device counts from matching groups
// in devs, first fit, and reports whether all found room.
func (c *Cluster) takeDevices(i int, t *Task, n int, devs []int) bool {
	groups := t.groups[c.class[i]]
	for range n {
		for r, req := range t.Devices {
			ok := false
			for _, g := range groups[r] {
				if devs[g] >= req.Count {
					devs[g] -= req.Count
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

// Free returns the free CPU (MHz), memory (MB) and device instances of node
// i.
func (c *Cluster) Free(i int) (cpu, mem, devices int) {
	f := c.free[i]
	for _, d := range f.devs {
		devices += d
	}
	return f.cpu, f.mem, devices
}

// FreeDevices returns the free instances of node i's device groups, in the
// node's order. The slice must not be modified.
func (c *Cluster) FreeDevices(i int) []int { return c.free[i].devs }

// Describe renders a node's free capacity for reasons and errors.
func (c *Cluster) Describe(i int) string {
	cpu, mem, devs := c.Free(i)
	return c.Nodes[i].ID + " (free cpu " + strconv.Itoa(cpu) + " MHz, memory " + strconv.Itoa(mem) + " MB, devices " + strconv.Itoa(devs) + ")"
}
