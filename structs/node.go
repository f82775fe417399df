package structs

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
}

// Schedulable reports whether new tasks may be placed on the node.
func (n *Node) Schedulable() bool { return n.Status == NodeStatusReady && n.Eligible }

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
