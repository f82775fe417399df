package structs

import (
	"fmt"
	"regexp"
	"strings"
)

// Resources is what one task asks for, in Nomad's units.
type Resources struct {
	CPU      int // MHz
	MemoryMB int
	Devices  []*RequestedDevice
}

// Canonicalize fills Nomad's task defaults: 100 MHz, 300 MB, and a count of
// one for each device request that gives none.
func (r *Resources) Canonicalize() {
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
	if r.MemoryMB < 10 {
		v.fail("memory", "%d MB is below Nomad's minimum of 10 MB", r.MemoryMB)
	}
	for i, d := range r.Devices {
		dv := v.at(fmt.Sprintf("device[%d]", i))
		if _, err := ParseDeviceID(d.Name); err != nil {
			dv.fail("name", "%v", err)
		}
		if d.Count < 1 {
			dv.fail("count", "%d must be at least 1", d.Count)
		}
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
