package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/caravan-sched/caravan/structs"
	nomadapi "github.com/hashicorp/nomad/api"
)

// ErrJobNotAllowed is what a JobPolicy's refusals wrap: the job uses a task
// driver, or runs in a namespace, the cluster does not allow.
var ErrJobNotAllowed = errors.New("job not allowed on this cluster")

// JobPolicy says which jobs the server runs: the Nomad task drivers their
// tasks may use and the namespaces they may run in (the agent's jobs
// block). Every task runs with the driver's Nomad token, so whoever may
// submit a job runs what the policy allows. The zero value allows every
// job, as caravan sim and tests need.
type JobPolicy struct {
	// Drivers lists the task drivers jobs may use; "*" stands for any.
	// Empty allows any.
	Drivers []string
	// DeniedDrivers lists drivers jobs may not use even when Drivers
	// allows them.
	DeniedDrivers []string
	// Namespaces lists the namespaces jobs may run in; "*" stands for
	// any. Empty allows any.
	Namespaces []string
}

// Check returns nil when the policy allows job, else an error wrapping
// ErrJobNotAllowed that names the namespace, or the first driver, at fault
// and the agent setting that refuses it. It checks the job's namespace,
// its roles' drivers and, for a job declared in Nomad, the driver of every
// task of the template's role groups. job must be canonicalized.
func (p JobPolicy) Check(job *structs.Job) error {
	if !allows(p.Namespaces, job.Namespace) {
		return p.refuse(job, "namespace %q is not allowed on this cluster (jobs.namespaces)", job.Namespace)
	}
	uses, err := jobDrivers(job)
	if err != nil {
		return err
	}
	for _, u := range uses {
		switch {
		case slices.Contains(p.DeniedDrivers, u.driver):
			return p.refuse(job, "task driver %q (%s) is not allowed on this cluster (jobs.denied_drivers)", u.driver, u.where)
		case !allows(p.Drivers, u.driver):
			return p.refuse(job, "task driver %q (%s) is not allowed on this cluster (jobs.drivers)", u.driver, u.where)
		}
	}
	return nil
}

// allows reports whether list, empty or with "*" meaning any, holds v.
func allows(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, "*") || slices.Contains(list, v)
}

func (p JobPolicy) refuse(job *structs.Job, format string, args ...any) error {
	return &notAllowedError{msg: fmt.Sprintf("job %q: ", job.ID) + fmt.Sprintf(format, args...)}
}

// notAllowedError is a refusal of a JobPolicy; it is ErrJobNotAllowed to
// errors.Is, and its message says what is refused and by which setting.
type notAllowedError struct{ msg string }

func (e *notAllowedError) Error() string        { return e.msg }
func (e *notAllowedError) Is(target error) bool { return target == ErrJobNotAllowed }

// driverUse is a task driver a job uses, and where, for people.
type driverUse struct {
	driver, where string
}

// jobDrivers lists the drivers job's tasks use: its roles', and for a job
// declared in Nomad those of every task of the template's role groups,
// which the Role holds only the main task of.
func jobDrivers(job *structs.Job) ([]driverUse, error) {
	var uses []driverUse
	if job.Worker != nil {
		uses = append(uses, driverUse{job.Worker.Driver, structs.RoleWorker + " role"})
	}
	if job.ParameterServer != nil {
		uses = append(uses, driverUse{job.ParameterServer.Driver, structs.RolePS + " role"})
	}
	if job.Nomad == nil {
		return uses, nil
	}
	var nj nomadapi.Job
	if err := json.Unmarshal(job.Nomad.Template, &nj); err != nil {
		return nil, &CodedError{Code: http.StatusBadRequest,
			Err: fmt.Errorf("job %q: decode its Nomad template to check its task drivers: %w", job.ID, err)}
	}
	roleGroups := map[string]bool{}
	for _, g := range job.Nomad.Groups {
		roleGroups[g] = true
	}
	for _, tg := range nj.TaskGroups {
		if tg == nil || tg.Name == nil || !roleGroups[*tg.Name] {
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil {
				uses = append(uses, driverUse{t.Driver, fmt.Sprintf("group %q, task %q", *tg.Name, t.Name)})
			}
		}
	}
	return uses, nil
}

// checkJobPolicy is Check as an HTTP endpoint's error: a refusal is a 400.
func (s *Server) checkJobPolicy(job *structs.Job) error {
	err := s.cfg.Jobs.Check(job)
	if errors.Is(err, ErrJobNotAllowed) {
		return &CodedError{Code: http.StatusBadRequest, Err: err}
	}
	return err
}
