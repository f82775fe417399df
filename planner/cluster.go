package planner

import (
	"fmt"
	"hash/maphash"
	"maps"
	"path"
	"slices"
	"strconv"

	"github.com/caravan-sched/caravan/planner/feasible"
	"github.com/caravan-sched/caravan/structs"
)

// Cluster is the free capacity of a request's nodes, updated as tasks are
// placed, with Nomad's device semantics: each task takes its device count
// from one device group that matches its request. Feasibility (constraints,
// datacenters, node pool, the role's task driver, device matching) is
// computed once per job role and
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
	// freeCPU, freeMem and freeDevs (by device type) sum the free
	// capacity of all nodes.
	freeCPU, freeMem int
	freeDevs         map[string]int
}

type nodeFree struct {
	cpu, mem int
	devs     []int // free instances per device group, in node order
}

// NewCluster returns the free capacity of nodes: every node's full capacity,
// with unhealthy device instances left out.
func NewCluster(nodes []*structs.Node) *Cluster {
	c := &Cluster{
		Nodes:    nodes,
		free:     make([]nodeFree, len(nodes)),
		class:    make([]int, len(nodes)),
		index:    make(map[string]int, len(nodes)),
		checker:  feasible.New(),
		freeDevs: map[string]int{},
	}
	byHash := map[uint64][]int{} // hash → classes with that hash
	for i, n := range nodes {
		c.index[n.ID] = i
		f := nodeFree{cpu: n.CPU, mem: n.MemoryMB}
		if len(n.Devices) > 0 {
			f.devs = make([]int, len(n.Devices))
			for g, d := range n.Devices {
				f.devs[g] = d.HealthyCount()
				c.freeDevs[d.Type] += f.devs[g]
			}
		}
		c.free[i] = f
		c.freeCPU += f.cpu
		c.freeMem += f.mem
		hash := classHash(n)
		id := -1
		for _, cl := range byHash[hash] {
			if sameClass(nodes[c.classes[cl]], n) {
				id = cl
				break
			}
		}
		if id < 0 {
			id = len(c.classes)
			byHash[hash] = append(byHash[hash], id)
			c.classes = append(c.classes, i)
		}
		c.class[i] = id
	}
	return c
}

// classSeed seeds the node class hashes; any fixed seed will do, since a
// hash match is always confirmed by sameClass.
var classSeed = maphash.MakeSeed()

// classHash hashes what decides feasibility for a node, except its identity,
// without allocating: map entries are hashed one by one and summed, so that
// their iteration order does not matter.
func classHash(n *structs.Node) uint64 {
	var h maphash.Hash
	h.SetSeed(classSeed)
	h.WriteString(n.Datacenter)
	h.WriteByte(0)
	h.WriteString(n.NodeClass)
	h.WriteByte(0)
	h.WriteString(n.NodePool)
	sum := h.Sum64()
	for i, m := range []map[string]string{n.Attributes, n.Meta} {
		var part uint64
		for k, v := range m {
			h.Reset()
			h.WriteByte(byte(i))
			h.WriteString(k)
			h.WriteByte(0)
			h.WriteString(v)
			part += h.Sum64()
		}
		sum = sum*31 + part
	}
	h.Reset()
	h.WriteByte(2)
	for _, d := range n.Drivers {
		h.WriteString(d)
		h.WriteByte(0)
	}
	sum = sum*31 + h.Sum64()
	for _, d := range n.Devices {
		h.Reset()
		h.WriteString(d.Vendor)
		h.WriteByte(0)
		h.WriteString(d.Type)
		h.WriteByte(0)
		h.WriteString(d.Name)
		var part uint64
		for k := range d.Attributes {
			part += maphash.String(classSeed, k)
		}
		sum = sum*31 + h.Sum64() + part
	}
	return sum
}

// sameClass reports whether nodes a and b are alike in everything that
// decides feasibility except their identity.
func sameClass(a, b *structs.Node) bool {
	if a.Datacenter != b.Datacenter || a.NodeClass != b.NodeClass || a.NodePool != b.NodePool ||
		!maps.Equal(a.Attributes, b.Attributes) || !maps.Equal(a.Meta, b.Meta) || len(a.Devices) != len(b.Devices) ||
		!slices.Equal(a.Drivers, b.Drivers) || (a.Drivers == nil) != (b.Drivers == nil) {
		return false
	}
	for i, da := range a.Devices {
		db := b.Devices[i]
		if da.ID() != db.ID() || !maps.EqualFunc(da.Attributes, db.Attributes, sameAttribute) {
			return false
		}
	}
	return true
}

func sameAttribute(x, y *structs.Attribute) bool {
	switch {
	case x == nil || y == nil:
		return x == y
	case x.Unit != y.Unit:
		return false
	case x.Int != nil || y.Int != nil:
		return x.Int != nil && y.Int != nil && *x.Int == *y.Int
	case x.Float != nil || y.Float != nil:
		return x.Float != nil && y.Float != nil && *x.Float == *y.Float
	case x.String != nil || y.String != nil:
		return x.String != nil && y.String != nil && *x.String == *y.String
	case x.Bool != nil || y.Bool != nil:
		return x.Bool != nil && y.Bool != nil && *x.Bool == *y.Bool
	}
	return true
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
	out.freeDevs = maps.Clone(c.freeDevs)
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
	// deviceTypes is the type of each of Devices.
	deviceTypes []string

	// DistinctHosts allows at most one task of this role per node.
	DistinctHosts bool

	constraints []*structs.Constraint
	// driver is the role's task driver: a node must have it (Node.HasDriver).
	driver      string
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
		driver:      r.Driver,
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
		t.deviceTypes = make([]string, len(t.Devices))
		for k, d := range t.Devices {
			id, _ := structs.ParseDeviceID(d.Name)
			t.DeviceCounts[id.Type] += d.Count
			t.deviceTypes[k] = id.Type
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
	if t.driver != "" && !n.HasDriver(t.driver) || !c.checker.Node(n, t.constraints) {
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
// fit (Fits, FitsPair); Take panics on devices that are not there. Taking
// no task does nothing, even where t could not run.
func (c *Cluster) Take(i int, t *Task, n int) {
	if n <= 0 {
		return
	}
	f := &c.free[i]
	f.cpu -= n * t.CPU
	f.mem -= n * t.MemoryMB
	c.freeCPU -= n * t.CPU
	c.freeMem -= n * t.MemoryMB
	for typ, count := range t.DeviceCounts {
		c.freeDevs[typ] -= n * count
	}
	if len(t.Devices) > 0 && (!c.Feasible(i, t) || !c.takeDevices(i, t, n, f.devs)) {
		panic(fmt.Sprintf("planner: Take on node %s without room for the devices", c.Nodes[i].ID))
	}
}

// takeDevices assigns each of n tasks its device counts from matching groups
// in devs, first fit, and reports whether all found room.
func (c *Cluster) takeDevices(i int, t *Task, n int, devs []int) bool {
	return c.shortDevice(i, t, n, devs) < 0
}

// shortDevice is takeDevices returning the index in t.Devices of the first
// request that found no room, or -1 when every task found room.
func (c *Cluster) shortDevice(i int, t *Task, n int, devs []int) int {
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
				return r
			}
		}
	}
	return -1
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

// FreeTotal returns the free CPU (MHz) and memory (MB) of all nodes
// together: a bound no placement can exceed.
func (c *Cluster) FreeTotal() (cpu, mem int) { return c.freeCPU, c.freeMem }

// FreeDeviceTotal returns the free device instances of a type ("gpu") on
// all nodes together.
func (c *Cluster) FreeDeviceTotal(typ string) int { return c.freeDevs[typ] }

// FreeDevices returns the free instances of node i's device groups, in the
// node's order. The slice must not be modified.
func (c *Cluster) FreeDevices(i int) []int { return c.free[i].devs }

// Describe renders a node's free capacity for reasons and errors.
func (c *Cluster) Describe(i int) string {
	cpu, mem, devs := c.Free(i)
	return c.Nodes[i].ID + " (free cpu " + strconv.Itoa(cpu) + " MHz, memory " + strconv.Itoa(mem) + " MB, devices " + strconv.Itoa(devs) + ")"
}
