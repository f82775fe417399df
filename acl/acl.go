package acl

import (
	"slices"
	"strings"
)

// ACL is the compiled union of a token's policies. It is immutable and
// safe for concurrent use; a nil ACL allows nothing.
type ACL struct {
	management bool
	// exact holds the rules of namespaces named without a glob, globs the
	// others, longest pattern first.
	exact map[string]capSet
	globs []globRule
	// operator, plugin, agent and queue are coarse policies; "" allows
	// nothing.
	operator, plugin, agent, queue string
}

type capSet map[string]bool

type globRule struct {
	pattern string
	caps    capSet
}

// ManagementACL allows everything.
var ManagementACL = &ACL{management: true}

// DenyAll allows nothing: the ACL of a request without a token when there
// is no anonymous policy.
var DenyAll = &ACL{}

// New compiles policies into one ACL: capabilities granted in a namespace
// by any policy add up, and a deny in any of them wins; the coarse
// operator, plugin, agent and queue policies take the highest level granted,
// and deny wins there too.
func New(policies ...*Policy) *ACL {
	a := &ACL{exact: map[string]capSet{}}
	globs := map[string]capSet{}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, ns := range p.Namespaces {
			target := a.exact
			if strings.Contains(ns.Name, "*") {
				target = globs
			}
			set := target[ns.Name]
			if set == nil {
				set = capSet{}
				target[ns.Name] = set
			}
			for _, c := range ns.Capabilities {
				set[c] = true
			}
		}
		a.operator = mergeCoarse(a.operator, p.Operator)
		a.plugin = mergeCoarse(a.plugin, p.Plugin)
		a.agent = mergeCoarse(a.agent, p.Agent)
		a.queue = mergeCoarse(a.queue, p.Queue)
	}
	for pattern, caps := range globs {
		a.globs = append(a.globs, globRule{pattern: pattern, caps: caps})
	}
	slices.SortFunc(a.globs, func(x, y globRule) int {
		if d := len(y.pattern) - len(x.pattern); d != 0 {
			return d
		}
		return strings.Compare(x.pattern, y.pattern)
	})
	return a
}

func mergeCoarse(have string, r *Rule) string {
	if r == nil {
		return have
	}
	rank := map[string]int{"": 0, PolicyRead: 1, PolicyWrite: 2, PolicyDeny: 3}
	if rank[r.Policy] > rank[have] {
		return r.Policy
	}
	return have
}

// IsManagement reports whether the ACL allows everything.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// rule returns the capabilities of the most specific rule matching ns:
// its exact rule, else the longest glob that matches.
func (a *ACL) rule(ns string) capSet {
	if caps, ok := a.exact[ns]; ok {
		return caps
	}
	for _, g := range a.globs {
		if globMatch(g.pattern, ns) {
			return g.caps
		}
	}
	return nil
}

// AllowNamespaceOperation reports whether the ACL grants capability op in
// namespace ns.
func (a *ACL) AllowNamespaceOperation(ns, op string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	caps := a.rule(ns)
	return !caps[CapDeny] && caps[op]
}

// AllowNamespace reports whether the ACL grants any capability in ns.
func (a *ACL) AllowNamespace(ns string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	caps := a.rule(ns)
	return !caps[CapDeny] && len(caps) > 0
}

// AllowAnyNamespace reports whether some namespace rule grants op; a
// request whose namespaces are known only once its body is parsed is
// refused early when it is false.
func (a *ACL) AllowAnyNamespace(op string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	for _, caps := range a.exact {
		if !caps[CapDeny] && caps[op] {
			return true
		}
	}
	return slices.ContainsFunc(a.globs, func(g globRule) bool { return !g.caps[CapDeny] && g.caps[op] })
}

func allowCoarse(management bool, have, want string) bool {
	switch {
	case management:
		return true
	case have == PolicyWrite:
		return true
	case have == PolicyRead:
		return want == PolicyRead
	}
	return false
}

// AllowOperatorRead reports whether the ACL may read the cluster's
// operator state: scheduler configuration, Raft configuration, nodes,
// plans and events.
func (a *ACL) AllowOperatorRead() bool {
	return a != nil && allowCoarse(a.management, a.operator, PolicyRead)
}

// AllowOperatorWrite reports whether the ACL may change it.
func (a *ACL) AllowOperatorWrite() bool {
	return a != nil && allowCoarse(a.management, a.operator, PolicyWrite)
}

// AllowPluginRead reports whether the ACL may list algorithm plugins.
func (a *ACL) AllowPluginRead() bool {
	return a != nil && allowCoarse(a.management, a.plugin, PolicyRead)
}

// AllowAgentRead reports whether the ACL may read an agent's own
// description, members and metrics.
func (a *ACL) AllowAgentRead() bool {
	return a != nil && allowCoarse(a.management, a.agent, PolicyRead)
}

// AllowAgentWrite reports whether the ACL may change an agent.
func (a *ACL) AllowAgentWrite() bool {
	return a != nil && allowCoarse(a.management, a.agent, PolicyWrite)
}

// AllowQueueRead reports whether the ACL may list and read the queues.
func (a *ACL) AllowQueueRead() bool {
	return a != nil && allowCoarse(a.management, a.queue, PolicyRead)
}

// AllowQueueWrite reports whether the ACL may create, change and delete
// queues.
func (a *ACL) AllowQueueWrite() bool {
	return a != nil && allowCoarse(a.management, a.queue, PolicyWrite)
}

// globMatch matches name against pattern, in which "*" stands for any run
// of characters, as Nomad's namespace globs.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, parts[len(parts)-1])
}
