package api

import "net/url"

// Node statuses (Node.Status).
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
	// Drivers are the task drivers the cluster detected on the node;
	// nil when the cluster does not report drivers (then the node runs
	// any driver).
	Drivers []string
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

// NodeDevice is one device instance.
type NodeDevice struct {
	// ID is the instance ID Nomad assigns to tasks (e.g. a GPU UUID).
	ID                string
	Healthy           bool
	HealthDescription string
}

// Attribute is a typed device attribute as Nomad's device plugins report it:
// exactly one of Int, Float, String and Bool is set, and numbers may carry a
// Unit ("16 GiB", "1530 MHz"). Numbers with units of the same kind compare by
// value, so "16 GiB" equals "16384 MiB".
type Attribute struct {
	Int    *int64
	Float  *float64
	String *string
	Bool   *bool
	Unit   string
}

// Nodes returns the cluster's nodes, ordered by ID, with q's list options.
func (c *Client) Nodes(q *QueryOptions) ([]*Node, *QueryMeta, error) {
	return get[[]*Node](c, "/v1/nodes", nil, q)
}

// Node returns the node with the given ID, with its devices and the tasks
// that run there.
func (c *Client) Node(id string, q *QueryOptions) (*NodeDetail, *QueryMeta, error) {
	return getOne[NodeDetail](c, "/v1/node/"+url.PathEscape(id), nil, q)
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

// GPUType returns the model of the node's GPUs: the Name of its first
// device group of type "gpu" with a healthy instance ("Tesla T4"), or ""
// for a node without one, as the server's Node.GPUType.
func (n *Node) GPUType() string {
	for _, d := range n.Devices {
		if d.Type == "gpu" && d.HealthyCount() > 0 {
			return d.Name
		}
	}
	return ""
}
