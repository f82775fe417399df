package structs

import (
	"fmt"
	"regexp"
	"strings"
)

// Resources is what one task asks for, in Nomad's units.
//
// CPU and MemoryMB are the size every task of the role runs at unless an
// algorithm's decision sizes it otherwise (structs.TaskSize). When the
// jobspec gives cpu or memory as a range, CPURange or MemoryRange holds it
// and CPU or MemoryMB is the range's Initial, so that an algorithm that
// ignores ranges still sees one size; nil ranges mean the size is fixed.
type Resources struct {
	CPU      int // MHz
	MemoryMB int
	Devices  []*RequestedDevice
	// CPURange (MHz) and MemoryRange (MB) bound the sizes a decision may
	// give a task of the role; nil when the size is fixed.
	CPURange    *ResourceRange `json:",omitempty"`
	MemoryRange *ResourceRange `json:",omitempty"`
}

// ResourceRange bounds one resource of a role's tasks, in the resource's
// unit (MHz or MB).
type ResourceRange struct {
	// Min is the smallest size a decision may give a task.
	Min int
	// Max is the largest; 0 means no bound but the node's capacity.
	Max int
	// Initial is the size tasks run at until an algorithm sizes them, and
	// the size of algorithms that ignore ranges. Canonicalize defaults it
	// to Max for CPU (DLRover samples at the per-task maximum) and to Min
	// for memory; to Nomad's task default when Max is 0.
	Initial int
	// Auto marks the jobspec's "auto": Min is Nomad's minimum and Max 0,
	// so the algorithm chooses the size within the node.
	Auto bool
}

// Nomad's smallest task sizes, the Min of an "auto" range.
const (
	MinCPU      = 1  // MHz
	MinMemoryMB = 10 // MB
)

// canonicalize fills Min for auto and Initial, and returns Initial.
// fixed is the role's fixed size when one was given alongside (0 if not),
// min Nomad's minimum and def its task default.
func (r *ResourceRange) canonicalize(fixed, min, def int, initialMax bool) int {
	if r.Auto && r.Min == 0 {
		r.Min = min
	}
	if r.Initial == 0 {
		switch {
		case fixed != 0:
			r.Initial = fixed
		case initialMax && r.Max > 0:
			r.Initial = r.Max
		case r.Max == 0:
			r.Initial = max(def, r.Min)
		default:
			r.Initial = r.Min
		}
	}
	return r.Initial
}

func (r *ResourceRange) validate(v validator, name, unit string, min, limit, size int) {
	rv := v.at(name)
	atMost(rv, "min", r.Min, limit)
	atMost(rv, "max", r.Max, limit)
	atMost(rv, "initial", r.Initial, limit)
	if r.Auto && r.Max != 0 {
		rv.fail("max", "%d %s: \"auto\" has no maximum but the node's capacity", r.Max, unit)
	}
	if r.Min < min {
		rv.fail("min", "%d %s is below Nomad's minimum of %d %s", r.Min, unit, min, unit)
	}
	if r.Max != 0 && r.Max < r.Min {
		rv.fail("max", "%d %s is below min (%d %s)", r.Max, unit, r.Min, unit)
	} else if r.Initial < r.Min || r.Max != 0 && r.Initial > r.Max {
		rv.fail("initial", "%d %s is outside %s", r.Initial, unit, r)
	}
	if size != r.Initial {
		v.fail(name, "%d %s differs from the range's initial size %d %s", size, unit, r.Initial, unit)
	}
}

// Contains reports whether size is within the range; a nil range contains
// nothing.
func (r *ResourceRange) Contains(size int) bool {
	return r != nil && size >= r.Min && (r.Max == 0 || size <= r.Max)
}

// String renders the range for people: "1000..8000", "10..node" or "auto".
func (r *ResourceRange) String() string {
	switch {
	case r.Auto:
		return "auto"
	case r.Max == 0:
		return fmt.Sprintf("%d..node", r.Min)
	}
	return fmt.Sprintf("%d..%d", r.Min, r.Max)
}

// Ranged reports whether either size of the role may be chosen by a
// decision.
func (r *Resources) Ranged() bool { return r.CPURange != nil || r.MemoryRange != nil }

// Sized returns the CPU (MHz) and memory (MB) of a task of the role sized s:
// s's fields where they are set, the role's fixed or initial size where not.
func (r *Resources) Sized(s TaskSize) (cpu, memoryMB int) {
	cpu, memoryMB = r.CPU, r.MemoryMB
	if s.CPU != 0 {
		cpu = s.CPU
	}
	if s.MemoryMB != 0 {
		memoryMB = s.MemoryMB
	}
	return cpu, memoryMB
}

// Canonicalize fills Nomad's task defaults: 100 MHz, 300 MB, and a count of
// one for each device request that gives none. A range's Initial becomes
// the role's CPU or MemoryMB.
func (r *Resources) Canonicalize() {
	if r.CPURange != nil {
		r.CPU = r.CPURange.canonicalize(r.CPU, MinCPU, DefaultCPU, true)
	}
	if r.MemoryRange != nil {
		r.MemoryMB = r.MemoryRange.canonicalize(r.MemoryMB, MinMemoryMB, DefaultMemoryMB, false)
	}
	if r.CPU == 0 {
		r.CPU = DefaultCPU
	}
	if r.MemoryMB == 0 {
		r.MemoryMB = DefaultMemoryMB
	}
	for _, d := range r.Devices {
		if d.Count == 0 {
			d.Count = 1
		}
		canonicalizeRules(d.Constraints, d.Affinities)
	}
}

func (r *Resources) validate(v validator) {
	if r.CPU < 1 {
		v.fail("cpu", "%d MHz must be positive", r.CPU)
	}
	if r.MemoryMB < MinMemoryMB {
		v.fail("memory", "%d MB is below Nomad's minimum of 10 MB", r.MemoryMB)
	}
	atMost(v, "cpu", r.CPU, MaxTaskCPU)
	atMost(v, "memory", r.MemoryMB, MaxTaskMemoryMB)
	if r.CPURange != nil {
		r.CPURange.validate(v, "cpu", "MHz", MinCPU, MaxTaskCPU, r.CPU)
	}
	if r.MemoryRange != nil {
		r.MemoryRange.validate(v, "memory", "MB", MinMemoryMB, MaxTaskMemoryMB, r.MemoryMB)
	}
	if len(r.Devices) > MaxDeviceRequests {
		v.fail("device", "%d device requests are more than the maximum of %d", len(r.Devices), MaxDeviceRequests)
	}
	for i, d := range r.Devices {
		dv := v.at(fmt.Sprintf("device[%d]", i))
		if _, err := ParseDeviceID(d.Name); err != nil {
			dv.fail("name", "%v", err)
		}
		if d.Count < 1 {
			dv.fail("count", "%d must be at least 1", d.Count)
		}
		atMost(dv, "count", d.Count, MaxDeviceCount)
		validateConstraints(dv, d.Constraints, true)
		validateAffinities(dv, d.Affinities)
	}
}

// RequestedDevice asks for Count instances of devices matching Name, with
// Nomad's semantics: Name is "<type>", "<vendor>/<type>" or
// "<vendor>/<type>/<model>", and the constraints and affinities may refer to
// ${device.attr.<name>}, ${device.vendor}, ${device.type} and ${device.model}.
type RequestedDevice struct {
	Name        string
	Count       int
	Constraints []*Constraint
	Affinities  []*Affinity
}

// DeviceID identifies a group of devices the way Nomad does. Vendor and Name
// are empty in a request that does not narrow them.
type DeviceID struct {
	Vendor string
	Type   string
	Name   string
}

// deviceSegment reports whether s is a valid vendor or type:
// [a-zA-Z0-9][a-zA-Z0-9_.+-]*. Planners parse device names for every job
// at every round, so it is a loop rather than a regular expression.
func deviceSegment(s string) bool {
	for i, r := range s {
		alnum := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("_.+-", r)) {
			return false
		}
	}
	return s != ""
}

// ParseDeviceID parses a device name of a request: "gpu", "nvidia/gpu" or
// "nvidia/gpu/Tesla V100-SXM2-16GB" (a model may contain spaces).
func ParseDeviceID(s string) (DeviceID, error) {
	parts := strings.Split(s, "/")
	bad := func(why string) (DeviceID, error) {
		return DeviceID{}, fmt.Errorf("device name %q %s; use \"<type>\", \"<vendor>/<type>\" or \"<vendor>/<type>/<model>\", e.g. \"nvidia/gpu\"", s, why)
	}
	if len(parts) > 3 {
		return bad("has more than three parts")
	}
	for i, p := range parts {
		if p == "" {
			return bad("has an empty part")
		}
		if i < 2 && !deviceSegment(p) {
			return bad(fmt.Sprintf("has an invalid part %q", p))
		}
	}
	switch len(parts) {
	case 1:
		return DeviceID{Type: parts[0]}, nil
	case 2:
		return DeviceID{Vendor: parts[0], Type: parts[1]}, nil
	}
	return DeviceID{Vendor: parts[0], Type: parts[1], Name: parts[2]}, nil
}

// String returns the most specific name form of id.
func (id DeviceID) String() string {
	switch {
	case id.Vendor == "":
		return id.Type
	case id.Name == "":
		return id.Vendor + "/" + id.Type
	}
	return id.Vendor + "/" + id.Type + "/" + id.Name
}

// Matches reports whether a node's device group other satisfies the request
// id: the type must be equal, and the vendor and model too where id names
// them.
func (id DeviceID) Matches(other DeviceID) bool {
	return id.Type == other.Type &&
		(id.Vendor == "" || id.Vendor == other.Vendor) &&
		(id.Name == "" || id.Name == other.Name)
}

// Constraint operators, as Nomad spells them.
const (
	OpEqual            = "="
	OpNotEqual         = "!="
	OpLess             = "<"
	OpLessEqual        = "<="
	OpGreater          = ">"
	OpGreaterEqual     = ">="
	OpRegexp           = "regexp"
	OpVersion          = "version"
	OpSemver           = "semver"
	OpSetContains      = "set_contains"
	OpSetContainsAll   = "set_contains_all"
	OpSetContainsAny   = "set_contains_any"
	OpIsSet            = "is_set"
	OpIsNotSet         = "is_not_set"
	OpDistinctHosts    = "distinct_hosts"
	OpDistinctProperty = "distinct_property"
)

// operatorAliases maps Nomad's alternative spellings to one operator.
var operatorAliases = map[string]string{"==": OpEqual, "is": OpEqual, "not": OpNotEqual}

var operators = map[string]bool{
	OpEqual: true, OpNotEqual: true, OpLess: true, OpLessEqual: true, OpGreater: true,
	OpGreaterEqual: true, OpRegexp: true, OpVersion: true, OpSemver: true,
	OpSetContains: true, OpSetContainsAll: true, OpSetContainsAny: true,
	OpIsSet: true, OpIsNotSet: true, OpDistinctHosts: true, OpDistinctProperty: true,
}

// Constraint restricts where a task, or which device instance, may be
// placed. LTarget is usually an interpolation such as "${attr.kernel.name}" or
// "${device.attr.memory}", RTarget a literal, and Operand one of the Op
// constants (Nomad's aliases "==", "is" and "not" are accepted and
// canonicalized).
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

func (c *Constraint) canonicalize() {
	if c.Operand == "" {
		c.Operand = OpEqual
	}
	if op, ok := operatorAliases[c.Operand]; ok {
		c.Operand = op
	}
}

// String renders c as Nomad does: "${attr.kernel.name} = linux".
func (c *Constraint) String() string {
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget))
}

func (c *Constraint) validate(v validator, device bool) {
	op := c.Operand
	if alias, ok := operatorAliases[op]; ok {
		op = alias
	}
	if !operators[op] {
		v.fail("operator", "%q is not a constraint operator", c.Operand)
		return
	}
	if device && (op == OpDistinctHosts || op == OpDistinctProperty) {
		v.fail("operator", "%q does not apply to devices", c.Operand)
	}
	if op != OpDistinctHosts && c.LTarget == "" {
		v.missing("attribute")
	}
	switch op {
	case OpDistinctHosts, OpDistinctProperty, OpIsSet, OpIsNotSet:
	default:
		if c.RTarget == "" {
			v.missing("value")
		}
	}
	if op == OpRegexp {
		if _, err := regexp.Compile(c.RTarget); err != nil {
			v.fail("value", "invalid regular expression: %v", err)
		}
	}
}

func validateConstraints(v validator, cs []*Constraint, device bool) {
	for i, c := range cs {
		c.validate(v.at(fmt.Sprintf("constraint[%d]", i)), device)
	}
}

// Affinity is a soft constraint: nodes (or device groups) that satisfy it
// score Weight, from -100 (avoid) to 100 (prefer), never 0.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int
}

// DefaultAffinityWeight is Nomad's weight for an affinity that gives none.
const DefaultAffinityWeight = 50

func canonicalizeRules(cs []*Constraint, as []*Affinity) {
	for _, c := range cs {
		c.canonicalize()
	}
	for _, a := range as {
		c := Constraint{Operand: a.Operand}
		c.canonicalize()
		a.Operand = c.Operand
		if a.Weight == 0 {
			a.Weight = DefaultAffinityWeight
		}
	}
}

func validateAffinities(v validator, as []*Affinity) {
	for i, a := range as {
		av := v.at(fmt.Sprintf("affinity[%d]", i))
		c := Constraint{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand}
		switch c.Operand {
		case OpDistinctHosts, OpDistinctProperty:
			av.fail("operator", "%q is not allowed in an affinity", a.Operand)
		default:
			c.validate(av, false)
		}
		if a.Weight == 0 || a.Weight < -100 || a.Weight > 100 {
			av.fail("weight", "%d must be between -100 and 100 and not 0", a.Weight)
		}
	}
}
