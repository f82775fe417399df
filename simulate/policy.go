package simulate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PolicySpec is one policy of `caravan sim -policy`: an algorithm's or a
// baseline's name and the options it runs with, as the agent's scheduler
// block would pass them.
type PolicySpec struct {
	Name    string
	Options map[string]string
	// Oracle runs the algorithm with oracle models (Options.Oracle),
	// written as the suffix "+oracle" to the name.
	Oracle bool
}

// ParsePolicy parses "name" or "name:key=value[:key=value...]", e.g.
// "specon:base=drf:alpha=0.02"; the name may end in "+oracle"
// (OracleSuffix), e.g. "optimus+oracle". Each key may appear once and every option
// needs a value; whether the algorithm takes them is for its SetConfig to
// say when the run starts.
func ParsePolicy(s string) (PolicySpec, error) {
	name, rest, hasOptions := strings.Cut(s, ":")
	name, oracle := strings.CutSuffix(name, OracleSuffix)
	spec := PolicySpec{Name: name, Oracle: oracle}
	if name == "" {
		return spec, fmt.Errorf("policy %q: no name", s)
	}
	if !hasOptions {
		return spec, nil
	}
	spec.Options = make(map[string]string)
	for _, kv := range strings.Split(rest, ":") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return spec, fmt.Errorf("policy %q: option %q is not key=value", s, kv)
		}
		if _, dup := spec.Options[k]; dup {
			return spec, fmt.Errorf("policy %q: option %q given twice", s, k)
		}
		spec.Options[k] = v
	}
	return spec, nil
}

// String is the spec as ParsePolicy reads it, options in key order: the
// policy's name in reports.
func (p PolicySpec) String() string {
	var b strings.Builder
	b.WriteString(p.Name)
	if p.Oracle {
		b.WriteString(OracleSuffix)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Options)) {
		fmt.Fprintf(&b, ":%s=%s", k, p.Options[k])
	}
	return b.String()
}
