package config

import (
	"fmt"
	"regexp"
	"slices"
)

// Any, in Jobs.Drivers or Jobs.Namespaces, stands for every driver or
// namespace.
const Any = "*"

// Jobs is the jobs block: which jobs the cluster accepts, by the Nomad
// task drivers their tasks use and the namespace they run in. Every task
// runs with Caravan's Nomad token, so whoever may submit a job runs what
// these allow on the Nomad clients. The servers refuse any other job at
// registration (and in a plan), and report a job declared in Nomad that
// breaks them as rejected.
//
// A list that is set, even to [], replaces the earlier one in Merge; nil
// means unset.
type Jobs struct {
	// Drivers lists the task drivers jobs may use; Any ("*") stands for
	// every driver. Default ["*"].
	Drivers []string `hcl:"drivers,optional"`
	// DeniedDrivers lists drivers jobs may not use even when Drivers
	// allows them (with Any, or by name). Default ["raw_exec"]: raw_exec
	// runs a task as the Nomad client's user, unisolated. [] denies none.
	DeniedDrivers []string `hcl:"denied_drivers,optional"`
	// Namespaces lists the namespaces jobs may run in; Any ("*") stands
	// for every namespace. Default ["*"].
	Namespaces []string `hcl:"namespaces,optional"`
}

// DefaultJobs returns the default jobs block: any driver but raw_exec, in
// any namespace.
func DefaultJobs() *Jobs {
	return &Jobs{Drivers: []string{Any}, DeniedDrivers: []string{"raw_exec"}, Namespaces: []string{Any}}
}

// Merge returns a copy of j with the lists set in o replacing j's. Either
// may be nil; the result is not.
func (j *Jobs) Merge(o *Jobs) *Jobs {
	r := copyOf(j)
	r.Drivers = slices.Clone(r.Drivers)
	r.DeniedDrivers = slices.Clone(r.DeniedDrivers)
	r.Namespaces = slices.Clone(r.Namespaces)
	if o == nil {
		return r
	}
	if o.Drivers != nil {
		r.Drivers = slices.Clone(o.Drivers)
	}
	if o.DeniedDrivers != nil {
		r.DeniedDrivers = slices.Clone(o.DeniedDrivers)
	}
	if o.Namespaces != nil {
		r.Namespaces = slices.Clone(o.Namespaces)
	}
	return r
}

// Validate checks that drivers and namespaces, when set, name at least
// one, and that every entry is a driver name, a namespace name or "*".
func (j *Jobs) Validate() error { return joinProblems(j.problems()) }

// driverName is what a Nomad task driver's name looks like.
var driverName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// namespaceName is Nomad's rule for namespace names.
var namespaceName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

func (j *Jobs) problems() []problem {
	if j == nil {
		return nil
	}
	var ps []problem
	check := func(key string, list []string, allowAny bool, name *regexp.Regexp, what, example string) {
		for i, v := range list {
			if allowAny && v == Any || name.MatchString(v) {
				continue
			}
			hint := fmt.Sprintf("use a %s such as %q", what, example)
			if allowAny {
				hint += ", or \"*\" for any"
			}
			ps = append(ps, problemf(fmt.Sprintf("%s[%d]", key, i), "%q is not a %s name; %s", v, what, hint))
		}
	}
	if j.Drivers != nil && len(j.Drivers) == 0 {
		ps = append(ps, problemf("drivers", "the list is empty, so no job could run; list the task drivers jobs may use, such as [\"docker\"], or [\"*\"] for any"))
	}
	if j.Namespaces != nil && len(j.Namespaces) == 0 {
		ps = append(ps, problemf("namespaces", "the list is empty, so no job could run; list the namespaces jobs may run in, such as [\"default\"], or [\"*\"] for any"))
	}
	check("drivers", j.Drivers, true, driverName, "task driver", "docker")
	check("denied_drivers", j.DeniedDrivers, false, driverName, "task driver", "raw_exec")
	check("namespaces", j.Namespaces, true, namespaceName, "namespace", "default")
	return ps
}
