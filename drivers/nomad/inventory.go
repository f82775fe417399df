package nomad

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// watchNodes follows Nomad's node list with blocking queries and keeps
// d.nodes current. A failed query is kept as d.nodesErr, so that Nodes
// fails rather than answer from a stale list, and retried with backoff.
func (d *Driver) watchNodes(ctx context.Context) {
	details := map[string]*api.Node{} // full nodes by ID, for attributes and meta
	follow(ctx, func(index uint64) ([]*api.NodeListStub, *api.QueryMeta, error) {
		stubs, meta, err := d.listNodes(ctx, index)
		if err == nil {
			err = d.refreshDetails(ctx, stubs, details)
		}
		return stubs, meta, err
	}, func(err error) {
		d.setNodes(nil, fmt.Errorf("list Nomad nodes: %w", err))
	}, func(stubs []*api.NodeListStub, _ uint64) {
		nodes := make([]*structs.Node, 0, len(stubs))
		for _, s := range stubs {
			nodes = append(nodes, convertNode(s, details[s.ID]))
		}
		slices.SortFunc(nodes, func(a, b *structs.Node) int { return strings.Compare(a.ID, b.ID) })
		d.setNodes(nodes, nil)
	})
}

// listNodes lists Nomad's nodes with their resources, blocking until
// Nomad's index passes index or WaitTime passes.
func (d *Driver) listNodes(ctx context.Context, index uint64) ([]*api.NodeListStub, *api.QueryMeta, error) {
	ctx, cancel := d.blockingContext(ctx, d.cfg.WaitTime)
	defer cancel()
	q := (&api.QueryOptions{WaitIndex: index, WaitTime: d.cfg.WaitTime, Params: map[string]string{"resources": "true"}}).WithContext(ctx)
	return d.client.Nodes().List(q)
}

// refreshDetails reads the full node of every stub that changed since it
// was last read; the list does not carry attributes and meta.
func (d *Driver) refreshDetails(ctx context.Context, stubs []*api.NodeListStub, details map[string]*api.Node) error {
	seen := make(map[string]bool, len(stubs))
	for _, s := range stubs {
		seen[s.ID] = true
		if n := details[s.ID]; n != nil && n.ModifyIndex == s.ModifyIndex {
			continue
		}
		n, err := d.readNode(ctx, s.ID)
		if err != nil {
			return fmt.Errorf("read Nomad node %s: %w", s.ID, err)
		}
		details[s.ID] = n
	}
	for id := range details {
		if !seen[id] {
			delete(details, id)
		}
	}
	return nil
}

func (d *Driver) readNode(ctx context.Context, id string) (*api.Node, error) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	n, _, err := d.client.Nodes().Info(id, (&api.QueryOptions{}).WithContext(ctx))
	return n, err
}

// convertNode turns Nomad's view of a node into Caravan's: capacity less
// what the node reserves, its devices with their healthy instances, and
// its healthy task drivers.
func convertNode(s *api.NodeListStub, full *api.Node) *structs.Node {
	n := &structs.Node{
		ID:         s.ID,
		Name:       s.Name,
		Datacenter: s.Datacenter,
		NodeClass:  s.NodeClass,
		NodePool:   s.NodePool,
		Status:     s.Status,
		Eligible:   s.SchedulingEligibility == api.NodeSchedulingEligible && !s.Drain,
	}
	drivers := s.Drivers
	if full != nil {
		n.Attributes, n.Meta = full.Attributes, full.Meta
		if drivers == nil {
			drivers = full.Drivers
		}
	}
	n.Drivers = convertDrivers(drivers)
	if r := s.NodeResources; r != nil {
		n.CPU, n.MemoryMB = int(r.Cpu.CpuShares), int(r.Memory.MemoryMB)
		for _, dev := range r.Devices {
			n.Devices = append(n.Devices, convertDevice(dev))
		}
	}
	if r := s.ReservedResources; r != nil {
		n.CPU -= int(r.Cpu.CpuShares)
		n.MemoryMB -= int(r.Memory.MemoryMB)
	}
	return n
}

// convertDrivers lists the drivers Nomad detected on the node, sorted;
// nil when Nomad reported no driver info (structs.Node.HasDriver). Health
// is left out, where Nomad's DriverChecker also requires it: a driver
// that is unhealthy for a while (a Docker daemon restarting) must neither
// get a job refused as one that never fits nor rewrite the replicated
// node list at every flap; a placement Nomad refuses meanwhile reaches
// the job's status as Nomad's failure.
func convertDrivers(drivers map[string]*api.DriverInfo) []string {
	if drivers == nil {
		return nil
	}
	out := []string{}
	for name, info := range drivers {
		if info != nil && info.Detected {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func convertDevice(dev *api.NodeDeviceResource) *structs.NodeDeviceResource {
	out := &structs.NodeDeviceResource{Vendor: dev.Vendor, Type: dev.Type, Name: dev.Name}
	for _, inst := range dev.Instances {
		out.Instances = append(out.Instances, &structs.NodeDevice{ID: inst.ID, Healthy: inst.Healthy, HealthDescription: inst.HealthDescription})
	}
	if len(dev.Attributes) > 0 {
		out.Attributes = make(map[string]*structs.Attribute, len(dev.Attributes))
		for k, a := range dev.Attributes {
			out.Attributes[k] = &structs.Attribute{Int: a.IntVal, Float: a.FloatVal, String: a.StringVal, Bool: a.BoolVal, Unit: a.Unit}
		}
	}
	return out
}

// gpuDevice returns the ID of the device group whose name is n's GPU type
// (structs.Node.GPUType): its first group of type "gpu" with a healthy
// instance. ok is false for a node without one.
func gpuDevice(n *structs.Node) (id structs.DeviceID, ok bool) {
	model := n.GPUType()
	if model == "" {
		return structs.DeviceID{}, false
	}
	for _, d := range n.Devices {
		if d.Type == "gpu" && d.Name == model && d.HealthyCount() > 0 {
			return d.ID(), true
		}
	}
	return structs.DeviceID{}, false
}

// gpuDevices returns the GPU device group (gpuDevice) of each node of p
// that has one, as the node list last read them, by node ID; nil when none
// has (Submission.GPUs).
func (d *Driver) gpuDevices(p *structs.Placement) map[string]structs.DeviceID {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[string]structs.DeviceID
	for _, e := range p.Nodes {
		i, found := slices.BinarySearchFunc(d.nodes, e.NodeID, func(n *structs.Node, id string) int { return strings.Compare(n.ID, id) })
		if !found {
			continue
		}
		if id, ok := gpuDevice(d.nodes[i]); ok {
			if out == nil {
				out = map[string]structs.DeviceID{}
			}
			out[e.NodeID] = id
		}
	}
	return out
}

// nodeAddrs returns the address (nodeAddrAttr) of each node of p whose
// attributes, as the node list last read them, have one, by node ID
// (Submission.NodeAddrs).
func (d *Driver) nodeAddrs(p *structs.Placement) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for _, e := range p.Nodes {
		i, found := slices.BinarySearchFunc(d.nodes, e.NodeID, func(n *structs.Node, id string) int { return strings.Compare(n.ID, id) })
		if found && d.nodes[i].Attributes[nodeAddrAttr] != "" {
			out[e.NodeID] = d.nodes[i].Attributes[nodeAddrAttr]
		}
	}
	return out
}
