package structs

import (
	"maps"
	"slices"
)

// Copy returns a deep copy of the job. Objects read from the state store or
// shared between goroutines are copied before they are modified.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Datacenters = slices.Clone(j.Datacenters)
	c.Meta = maps.Clone(j.Meta)
	c.Constraints = copyAll(j.Constraints)
	c.Affinities = copyAll(j.Affinities)
	c.Training = j.Training.Copy()
	c.Elastic = j.Elastic.Copy()
	c.Worker = j.Worker.Copy()
	c.ParameterServer = j.ParameterServer.Copy()
	c.Nomad = j.Nomad.Copy()
	return &c
}

// Copy returns a deep copy of the Nomad source.
func (n *NomadSource) Copy() *NomadSource {
	if n == nil {
		return nil
	}
	c := *n
	c.Groups = maps.Clone(n.Groups)
	c.Template = slices.Clone(n.Template)
	return &c
}

// Copy returns a deep copy of the training block.
func (t *Training) Copy() *Training {
	if t == nil {
		return nil
	}
	c := *t
	c.Convergence = copyPtr(t.Convergence)
	c.BatchSize = copyPtr(t.BatchSize)
	c.Speeds = nil
	for _, sp := range t.Speeds {
		c.Speeds = append(c.Speeds, copyPtr(sp))
	}
	return &c
}

// Copy returns a deep copy of the elastic block.
func (e *Elastic) Copy() *Elastic {
	if e == nil {
		return nil
	}
	c := *e
	c.ParameterServers = copyPtr(e.ParameterServers)
	c.Checkpoint = copyPtr(e.Checkpoint)
	return &c
}

// Copy returns a deep copy of the role template, driver config included.
func (r *Role) Copy() *Role {
	if r == nil {
		return nil
	}
	c := *r
	c.Config = copyMap(r.Config)
	c.Env = maps.Clone(r.Env)
	c.Meta = maps.Clone(r.Meta)
	c.Resources = r.Resources.Copy()
	c.Constraints = copyAll(r.Constraints)
	c.Affinities = copyAll(r.Affinities)
	return &c
}

// Copy returns a deep copy of the resources.
func (r *Resources) Copy() *Resources {
	if r == nil {
		return nil
	}
	c := *r
	c.CPURange, c.MemoryRange = copyPtr(r.CPURange), copyPtr(r.MemoryRange)
	if r.Devices != nil {
		c.Devices = make([]*RequestedDevice, len(r.Devices))
		for i, d := range r.Devices {
			c.Devices[i] = d.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy of the device request.
func (d *RequestedDevice) Copy() *RequestedDevice {
	if d == nil {
		return nil
	}
	c := *d
	c.Constraints = copyAll(d.Constraints)
	c.Affinities = copyAll(d.Affinities)
	return &c
}

// copyPtr copies a struct with no reference fields.
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// copyAll copies a slice of pointers to structs with no reference fields.
func copyAll[T any](s []*T) []*T {
	if s == nil {
		return nil
	}
	c := make([]*T, len(s))
	for i, p := range s {
		c[i] = copyPtr(p)
	}
	return c
}

// copyMap deep-copies a driver config as the jobspec parser and msgpack
// produce it: nested map[string]any and []any of plain values.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = copyValue(v)
	}
	return c
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyMap(v)
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = copyValue(e)
		}
		return c
	default:
		return v
	}
}

// Copy returns a deep copy of the node.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Attributes = maps.Clone(n.Attributes)
	c.Meta = maps.Clone(n.Meta)
	c.Drivers = slices.Clone(n.Drivers)
	if n.Devices != nil {
		c.Devices = make([]*NodeDeviceResource, len(n.Devices))
		for i, d := range n.Devices {
			c.Devices[i] = d.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy of the device group.
func (d *NodeDeviceResource) Copy() *NodeDeviceResource {
	if d == nil {
		return nil
	}
	c := *d
	c.Instances = copyAll(d.Instances)
	if d.Attributes != nil {
		c.Attributes = make(map[string]*Attribute, len(d.Attributes))
		for k, a := range d.Attributes {
			c.Attributes[k] = a.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy of the attribute.
func (a *Attribute) Copy() *Attribute {
	if a == nil {
		return nil
	}
	c := *a
	c.Int, c.Float, c.String, c.Bool = copyPtr(a.Int), copyPtr(a.Float), copyPtr(a.String), copyPtr(a.Bool)
	return &c
}

// Copy returns a deep copy of the placement.
func (p *Placement) Copy() *Placement {
	if p == nil {
		return nil
	}
	c := *p
	c.Nodes = copyAll(p.Nodes)
	c.Metric = p.Metric.Copy()
	c.Batch = copyPtr(p.Batch)
	c.Finished = copyPtr(p.Finished)
	if p.Actions != nil {
		c.Actions = make([]*TaskAction, len(p.Actions))
		for i, a := range p.Actions {
			c.Actions[i] = a.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy of the action.
func (a *TaskAction) Copy() *TaskAction {
	if a == nil {
		return nil
	}
	c := *a
	c.Details = maps.Clone(a.Details)
	return &c
}

// Copy returns a deep copy of the change.
func (c *Change) Copy() *Change {
	if c == nil {
		return nil
	}
	o := *c
	o.Target = c.Target.Copy()
	return &o
}

// Copy returns a deep copy of the observed state.
func (o *Observed) Copy() *Observed {
	if o == nil {
		return nil
	}
	c := *o
	c.Placement = o.Placement.Copy()
	c.Change = o.Change.Copy()
	c.Failures = CopyFailures(o.Failures)
	return &c
}
