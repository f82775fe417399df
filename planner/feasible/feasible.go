package feasible

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	version "github.com/hashicorp/go-version"
)

// Checker evaluates constraints. The zero value is not usable; use New.
type Checker struct {
	regexps  map[string]*regexp.Regexp
	versions map[string]version.Constraints
}

// New returns a Checker with empty caches.
func New() *Checker {
	return &Checker{regexps: map[string]*regexp.Regexp{}, versions: map[string]version.Constraints{}}
}

// NodeTarget resolves a node interpolation such as "${attr.kernel.name}",
// "${meta.rack}", "${node.class}" or "${node.unique.id}" against n. A target
// that is not an interpolation is returned as it is.
func NodeTarget(n *structs.Node, target string) (string, bool) {
	name, ok := interpolation(target)
	if !ok {
		return target, true
	}
	switch {
	case strings.HasPrefix(name, "attr."):
		v, ok := n.Attributes[name[len("attr."):]]
		return v, ok
	case strings.HasPrefix(name, "meta."):
		v, ok := n.Meta[name[len("meta."):]]
		return v, ok
	}
	switch name {
	case "node.unique.id":
		return n.ID, true
	case "node.unique.name":
		return n.Name, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.class":
		return n.NodeClass, n.NodeClass != ""
	case "node.pool":
		return n.NodePool, n.NodePool != ""
	}
	return "", false
}

// UsesNodeIdentity reports whether a constraint refers to a node's own
// identity (its ID or name), so that its outcome cannot be shared between
// nodes that otherwise look alike.
func UsesNodeIdentity(c *structs.Constraint) bool {
	return strings.Contains(c.LTarget, "node.unique.") || strings.Contains(c.RTarget, "node.unique.")
}

func interpolation(s string) (string, bool) {
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") {
		return s[2 : len(s)-1], true
	}
	return "", false
}

// Node reports whether node n satisfies every constraint. distinct_hosts and
// distinct_property concern several tasks, not one node; they hold here and
// are the placement's to enforce.
func (c *Checker) Node(n *structs.Node, constraints []*structs.Constraint) bool {
	return c.FailedConstraint(n, constraints) == nil
}

// FailedConstraint returns the first of constraints that node n does not
// satisfy, as Node decides it, or nil when n satisfies them all. Placement
// failures name it.
func (c *Checker) FailedConstraint(n *structs.Node, constraints []*structs.Constraint) *structs.Constraint {
	for _, con := range constraints {
		switch con.Operand {
		case structs.OpDistinctHosts, structs.OpDistinctProperty:
			continue
		}
		l, lok := NodeTarget(n, con.LTarget)
		r, rok := NodeTarget(n, con.RTarget)
		if !c.check(con.Operand, l, lok, r, rok, nil, nil) {
			return con
		}
	}
	return nil
}

// DeviceGroup reports whether a node's device group d satisfies a device
// request's identity and constraints; it does not look at counts.
func (c *Checker) DeviceGroup(d *structs.NodeDeviceResource, req *structs.RequestedDevice) bool {
	matches, failed := c.FailedDeviceConstraint(d, req)
	return matches && failed == nil
}

// FailedDeviceConstraint reports whether device group d has the identity
// a device request names and, if it has, returns the first of the
// request's constraints d does not satisfy (nil when it satisfies them
// all). Placement failures name it.
func (c *Checker) FailedDeviceConstraint(d *structs.NodeDeviceResource, req *structs.RequestedDevice) (matches bool, failed *structs.Constraint) {
	id, err := structs.ParseDeviceID(req.Name)
	if err != nil || !id.Matches(d.ID()) {
		return false, nil
	}
	for _, con := range req.Constraints {
		l, lok := deviceTarget(d, con.LTarget)
		r, rok := deviceTarget(d, con.RTarget)
		var la, ra *structs.Attribute
		if lok {
			la = attributeOf(d, con.LTarget, l)
		}
		if rok {
			ra = attributeOf(d, con.RTarget, r)
		}
		if !c.check(con.Operand, l, lok, r, rok, la, ra) {
			return true, con
		}
	}
	return true, nil
}

func deviceTarget(d *structs.NodeDeviceResource, target string) (string, bool) {
	name, ok := interpolation(target)
	if !ok {
		return target, true
	}
	switch name {
	case "device.vendor":
		return d.Vendor, true
	case "device.type":
		return d.Type, true
	case "device.model":
		return d.Name, true
	}
	if key, ok := strings.CutPrefix(name, "device.attr."); ok {
		if a, ok := d.Attributes[key]; ok {
			return a.GoString(), true
		}
	}
	return "", false
}

// attributeOf returns the typed attribute behind a target: the device's own
// for ${device.attr.*}, else the literal parsed ("16 GiB").
func attributeOf(d *structs.NodeDeviceResource, target, value string) *structs.Attribute {
	if name, ok := interpolation(target); ok {
		if key, ok := strings.CutPrefix(name, "device.attr."); ok {
			return d.Attributes[key]
		}
	}
	return structs.ParseAttribute(value)
}

// check applies one operator. la and ra, when set, are typed attributes for
// the ordered comparisons; otherwise numbers compare as numbers and the rest
// lexically, as Nomad's checkLexicalOrder and checkAttributeConstraint do.
func (c *Checker) check(op, l string, lok bool, r string, rok bool, la, ra *structs.Attribute) bool {
	switch op {
	case structs.OpIsSet:
		return lok
	case structs.OpIsNotSet:
		return !lok
	}
	if !lok || !rok {
		return false
	}
	switch op {
	case structs.OpEqual:
		if la != nil && ra != nil {
			cmp, ok := la.Compare(ra)
			return ok && cmp == 0
		}
		return l == r
	case structs.OpNotEqual:
		if la != nil && ra != nil {
			cmp, ok := la.Compare(ra)
			return !ok || cmp != 0
		}
		return l != r
	case structs.OpLess, structs.OpLessEqual, structs.OpGreater, structs.OpGreaterEqual:
		cmp, ok := compare(l, r, la, ra)
		if !ok {
			return false
		}
		switch op {
		case structs.OpLess:
			return cmp < 0
		case structs.OpLessEqual:
			return cmp <= 0
		case structs.OpGreater:
			return cmp > 0
		}
		return cmp >= 0
	case structs.OpRegexp:
		re, ok := c.regexps[r]
		if !ok {
			var err error
			if re, err = regexp.Compile(r); err != nil {
				re = nil
			}
			c.regexps[r] = re
		}
		return re != nil && re.MatchString(l)
	case structs.OpVersion, structs.OpSemver:
		return c.version(l, r)
	case structs.OpSetContains, structs.OpSetContainsAll:
		have := set(l)
		for _, want := range strings.Split(r, ",") {
			if !have[strings.TrimSpace(want)] {
				return false
			}
		}
		return true
	case structs.OpSetContainsAny:
		have := set(l)
		for _, want := range strings.Split(r, ",") {
			if have[strings.TrimSpace(want)] {
				return true
			}
		}
		return false
	}
	return false
}

func compare(l, r string, la, ra *structs.Attribute) (int, bool) {
	if la != nil && ra != nil {
		return la.Compare(ra)
	}
	lf, lerr := strconv.ParseFloat(l, 64)
	rf, rerr := strconv.ParseFloat(r, 64)
	switch {
	case lerr == nil && rerr == nil:
		switch {
		case lf < rf:
			return -1, true
		case lf > rf:
			return 1, true
		}
		return 0, true
	case lerr == nil || rerr == nil:
		return 0, false
	}
	return strings.Compare(l, r), true
}

func (c *Checker) version(have, constraint string) bool {
	cons, ok := c.versions[constraint]
	if !ok {
		var err error
		if cons, err = version.NewConstraint(constraint); err != nil {
			cons = nil
		}
		c.versions[constraint] = cons
	}
	v, err := version.NewVersion(have)
	return cons != nil && err == nil && cons.Check(v)
}

func set(csv string) map[string]bool {
	out := map[string]bool{}
	for _, s := range strings.Split(csv, ",") {
		out[strings.TrimSpace(s)] = true
	}
	return out
}
