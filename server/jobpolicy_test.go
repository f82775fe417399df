package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/config"
	"github.com/caravan-sched/caravan/structs"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// defaultPolicy is the policy of an agent whose configuration has no jobs
// block: any driver but raw_exec, any namespace.
func defaultPolicy() JobPolicy {
	j := config.DefaultJobs()
	return JobPolicy{Drivers: j.Drivers, DeniedDrivers: j.DeniedDrivers, Namespaces: j.Namespaces}
}

// nomadTemplate encodes a Nomad job of groups, each a list of task
// drivers, as a NomadSource.Template.
func nomadTemplate(t *testing.T, groups map[string][]string) json.RawMessage {
	t.Helper()
	nj := &nomadapi.Job{}
	for name, drivers := range groups {
		tg := nomadapi.NewTaskGroup(name, 1)
		for i, d := range drivers {
			tg.Tasks = append(tg.Tasks, nomadapi.NewTask(strings.Repeat("t", i+1), d))
		}
		nj.TaskGroups = append(nj.TaskGroups, tg)
	}
	b, err := json.Marshal(nj)
	must.NoError(t, err)
	return b
}

func TestJobPolicy_Check(t *testing.T) {
	job := func(ns, worker, ps string, nomad *structs.NomadSource) *structs.Job {
		j := &structs.Job{ID: "x", Namespace: ns, Worker: &structs.Role{Name: structs.RoleWorker, Driver: worker}, Nomad: nomad}
		if ps != "" {
			j.ParameterServer = &structs.Role{Name: structs.RolePS, Driver: ps}
		}
		return j
	}
	declared := func(groups map[string][]string) *structs.NomadSource {
		return &structs.NomadSource{Groups: map[string]string{structs.RoleWorker: "train", structs.RolePS: "ps"}, Template: nomadTemplate(t, groups)}
	}
	cases := []struct {
		name   string
		policy JobPolicy
		job    *structs.Job
		err    string // none: allowed
	}{
		{name: "zero policy allows raw_exec", job: job("ml", "raw_exec", "raw_exec", nil)},
		{name: "default allows docker", policy: defaultPolicy(), job: job("ml", "docker", "exec", nil)},
		{
			name: "default refuses raw_exec workers", policy: defaultPolicy(), job: job("default", "raw_exec", "", nil),
			err: `job "x": task driver "raw_exec" (worker role) is not allowed on this cluster (jobs.denied_drivers)`,
		},
		{
			name: "default refuses raw_exec parameter servers", policy: defaultPolicy(), job: job("default", "docker", "raw_exec", nil),
			err: `job "x": task driver "raw_exec" (ps role) is not allowed on this cluster (jobs.denied_drivers)`,
		},
		{
			name: "denied wins over a listed driver", policy: JobPolicy{Drivers: []string{"raw_exec"}, DeniedDrivers: []string{"raw_exec"}},
			job: job("default", "raw_exec", "", nil), err: `(jobs.denied_drivers)`,
		},
		{name: "nothing denied", policy: JobPolicy{Drivers: []string{"*"}, DeniedDrivers: []string{}}, job: job("default", "raw_exec", "", nil)},
		{
			name: "driver not listed", policy: JobPolicy{Drivers: []string{"docker", "exec"}}, job: job("default", "docker", "podman", nil),
			err: `job "x": task driver "podman" (ps role) is not allowed on this cluster (jobs.drivers)`,
		},
		{
			name: "namespace not listed", policy: JobPolicy{Namespaces: []string{"default", "ml"}}, job: job("research", "docker", "", nil),
			err: `job "x": namespace "research" is not allowed on this cluster (jobs.namespaces)`,
		},
		{name: "namespace listed", policy: JobPolicy{Namespaces: []string{"default", "ml"}}, job: job("ml", "docker", "", nil)},
		{
			name: "every task of a declared role group", policy: defaultPolicy(),
			job: job("default", "docker", "", declared(map[string][]string{"train": {"docker", "raw_exec"}})),
			err: `job "x": task driver "raw_exec" (group "train", task "tt") is not allowed on this cluster (jobs.denied_drivers)`,
		},
		{
			name: "the parameter servers' group", policy: defaultPolicy(),
			job: job("default", "docker", "docker", declared(map[string][]string{"train": {"docker"}, "ps": {"exec", "raw_exec"}})),
			err: `(group "ps", task "tt")`,
		},
		{
			name: "groups without a role are not Caravan's to run", policy: defaultPolicy(),
			job: job("default", "docker", "", declared(map[string][]string{"train": {"docker"}, "web": {"raw_exec"}})),
		},
		{
			name: "undecodable template", policy: defaultPolicy(),
			job: job("default", "docker", "", &structs.NomadSource{Groups: map[string]string{structs.RoleWorker: "train"}, Template: []byte(`{"TaskGroups": 7}`)}),
			err: `job "x": decode its Nomad template to check its task drivers`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Check(tc.job)
			if tc.err == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, tc.err)
			if !strings.Contains(tc.err, "decode") {
				must.ErrorIs(t, err, ErrJobNotAllowed)
			}
		})
	}
}

// TestAPI_JobPolicy: a server with the default jobs block refuses the
// demo job (raw_exec) with a 400 that names the driver and the setting, at
// registration, in a plan, and in a follower's check before forwarding;
// it takes it once raw_exec is allowed; and it refuses a namespace not
// listed.
func TestAPI_JobPolicy(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Jobs = defaultPolicy()
	cfg.Jobs.Namespaces = []string{"default"}
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	ctx := context.Background()

	const refused = `job "demo": task driver "raw_exec" (worker role) is not allowed on this cluster (jobs.denied_drivers)`
	var apiErr *api.Error
	_, _, err := c.Jobs().Register(demoJob(t, "demo"), (&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, refused)
	must.True(t, errors.As(err, &apiErr))
	must.Eq(t, http.StatusBadRequest, apiErr.StatusCode)
	_, _, err = c.Jobs().Plan(demoJob(t, "demo"), (&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, refused)
	must.True(t, errors.As(err, &apiErr))
	must.Eq(t, http.StatusBadRequest, apiErr.StatusCode)

	// What a follower checks before it forwards.
	for _, path := range []string{"/v1/jobs", "/v1/jobs/plan"} {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(mustJSON(t, demoJob(t, "demo"))))
		err := s.checkJobRequest(r)
		must.ErrorContains(t, err, refused)
		must.Eq(t, http.StatusBadRequest, errorCode(err))
	}

	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, jobs, must.Sprint("a refused job is not registered"))

	// The demo in another namespace is refused for that first.
	inML := demoJob(t, "demo")
	inML.JobHCL = strings.Replace(inML.JobHCL, `job "demo" {`, "job \"demo\" {\n  namespace = \"ml\"", 1)
	_, _, err = c.Jobs().Register(inML, (&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, `job "demo": namespace "ml" is not allowed on this cluster (jobs.namespaces)`)

}

// TestAPI_JobPolicyAllows: a server that lists raw_exec and denies none
// runs the demo job.
func TestAPI_JobPolicyAllows(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Jobs = JobPolicy{Drivers: []string{"docker", "raw_exec"}, DeniedDrivers: []string{}, Namespaces: []string{"default"}}
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "demo"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 10*time.Second, "job demo running", jobStatus(t, c, "demo", structs.JobStatusRunning))
}

// TestLeader_DeclaredJobPolicy: a job declared in the cluster that the
// jobs block refuses, by its main task or by another task of a role
// group, is reported as a JobRejected event, once per version, and never
// registered: its record says it was rejected.
func TestLeader_DeclaredJobPolicy(t *testing.T) {
	disc := &declarations{decls: map[structs.JobKey]*structs.Declaration{}}
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Discoverer = disc
	cfg.Interval = time.Hour
	cfg.Jobs = defaultPolicy()
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)

	main := declaredDemo(t, "main", 10, 4) // its worker's driver is raw_exec
	side := declaredDemo(t, "side", 11, 4)
	side.Job.Worker.Driver = "docker"
	side.Job.Nomad.Template = nomadTemplate(t, map[string][]string{"worker": {"docker", "raw_exec"}})
	disc.set("main", main)
	disc.set("side", side)

	rejections := func(job string) []*api.Event {
		evs, _, err := c.Events(job, nil)
		must.NoError(t, err)
		var out []*api.Event
		for _, e := range evs {
			if e.Type == structs.EventJobRejected {
				out = append(out, e)
			}
		}
		return out
	}
	agent.WaitFor(t, 10*time.Second, "both declarations rejected", func() error {
		for _, id := range []string{"main", "side"} {
			if len(rejections(id)) == 0 {
				return errors.New("job " + id + " not rejected yet")
			}
		}
		return nil
	})
	must.StrContains(t, rejections("main")[0].Message, `task driver "raw_exec" (worker role) is not allowed on this cluster (jobs.denied_drivers)`)
	must.StrContains(t, rejections("side")[0].Message, `task driver "raw_exec" (group "worker", task "tt") is not allowed on this cluster (jobs.denied_drivers)`)

	// Once per version: the leader acts on the declarations again when a
	// new one comes, and reports neither again.
	ok := declaredDemo(t, "ok", 12, 4)
	ok.Job.Worker.Driver = "docker"
	disc.set("ok", ok)
	agent.WaitFor(t, 10*time.Second, "job ok running", jobStatus(t, c, "ok", structs.JobStatusRunning))
	for _, id := range []string{"main", "side"} {
		must.SliceLen(t, 1, rejections(id))
		job, _, err := c.Jobs().Info(id, nil)
		must.NoError(t, err)
		must.Eq(t, structs.JobStatusRejected, job.Status, must.Sprintf("job %s is recorded as rejected", id))
		must.Nil(t, job.Training, must.Sprintf("job %s: never registered, it has no spec", id))
	}
}
