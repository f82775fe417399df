package structs

import (
	"maps"
	"slices"
	"strconv"
)

// Node statuses, as Nomad reports them.
const (
	NodeStatusInit  = "initializing"
	NodeStatusReady = "ready"
	NodeStatusDown  = "down"
)

// Node is one machine of the cluster as a driver reports it: its capacity,
// its devices and what Nomad knows about it. Capacity is what tasks may use,
// with the node's reserved resources already taken out.
type Node struct {
	ID         string
	Name       string
	Datacenter string
	NodeClass  string
	NodePool   string
	Status     string
	// Eligible is false while the node is drained or marked ineligible.
	Eligible bool

	CPU      int // MHz
	MemoryMB int
	Devices  []*NodeDeviceResource

	// Attributes and Meta are Nomad's node attributes and metadata, the
	// targets of ${attr.*} and ${meta.*} constraints.
	Attributes map[string]string
	Meta       map[string]string

	// Drivers are the task drivers Nomad fingerprinted on the node as
	// detected, sorted. Nil means the node's driver does not report
	// drivers (the simulated cluster): see HasDriver. Not omitempty: an
	// empty list (a node with no driver) must stay empty, not come back
	// from the state as nil (any driver).
	Drivers []string
}

// HasDriver reports whether the node can run tasks of the named task
// driver. A node that reports its drivers (Drivers is not nil, as every
// Nomad node since 0.8 does) runs those listed, as Nomad's DriverChecker
// decides. A node that does not (the simulated cluster) runs any driver
// unless its "driver.<name>" attribute parses as false: clusters that do
// not model drivers keep working.
func (n *Node) HasDriver(name string) bool {
	if n.Drivers != nil {
		return slices.Contains(n.Drivers, name)
	}
	if v, ok := n.Attributes["driver."+name]; ok {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return true
}

// Schedulable reports whether new tasks may be placed on the node.
func (n *Node) Schedulable() bool { return n.Status == NodeStatusReady && n.Eligible }

// GPUType returns the model of the node's GPUs: the Name of its first
// device group of type "gpu" with a healthy instance, as Nomad's device
// fingerprint reports it ("Tesla T4"), or "" for a node without one. Nodes
// whose GPUs share a model are of one GPU type; a job of a mixed fleet runs
// on one type at a time (Sia §3.2's configurations).
func (n *Node) GPUType() string {
	for _, d := range n.Devices {
		if d.Type == "gpu" && d.HealthyCount() > 0 {
			return d.Name
		}
	}
	return ""
}

// PlacementGPUTypes returns the GPU types of the nodes of placements
// (nil ones skipped) that have one, by node ID, from nodes; nil when none
// has. It is JobSummary.GPUTypes.
func PlacementGPUTypes(nodes []*Node, placements ...*Placement) map[string]string {
	var out map[string]string
	for _, p := range placements {
		if p == nil {
			continue
		}
		for _, e := range p.Nodes {
			i := slices.IndexFunc(nodes, func(n *Node) bool { return n.ID == e.NodeID })
			if i < 0 {
				continue
			}
			if t := nodes[i].GPUType(); t != "" {
				if out == nil {
					out = map[string]string{}
				}
				out[e.NodeID] = t
			}
		}
	}
	return out
}

// GPUTypeNames returns the GPU types of byNode (as PlacementGPUTypes
// returns them), sorted and without repeats; nil when it holds none.
func GPUTypeNames(byNode map[string]string) []string {
	if len(byNode) == 0 {
		return nil
	}
	out := slices.Sorted(maps.Values(byNode))
	return slices.Compact(out)
}

// NodeDeviceResource is a group of identical devices on a node, such as four
// "nvidia/gpu/Tesla V100" cards, as Nomad's device fingerprint reports it.
type NodeDeviceResource struct {
	Vendor    string
	Type      string
	Name      string
	Instances []*NodeDevice
	// Attributes are the targets of ${device.attr.<key>} constraints.
	Attributes map[string]*Attribute
}

// ID returns the group's device identity.
func (d *NodeDeviceResource) ID() DeviceID {
	return DeviceID{Vendor: d.Vendor, Type: d.Type, Name: d.Name}
}

// HealthyCount returns how many instances of the group are healthy.
func (d *NodeDeviceResource) HealthyCount() int {
	n := 0
	for _, inst := range d.Instances {
		if inst.Healthy {
			n++
		}
	}
	return n
}

// NodeDevice is one device instance.
type NodeDevice struct {
	// ID is the instance ID Nomad assigns to tasks (e.g. a GPU UUID).
	ID                string
	Healthy           bool
	HealthDescription string
}
