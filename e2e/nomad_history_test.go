//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/nomad"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// The tests of this file measure the history a rescale leaves in Nomad
// (issue 28, "quiet history"): the versions of the Nomad job it makes and
// the allocations it creates and stops.

// historyDelta is what one change of a job left in Nomad.
type historyDelta struct {
	// versions is how much the Nomad job's version grew.
	versions uint64
	// created counts allocations that did not exist before; stopped
	// counts allocations that Nomad ran (desired run) before and stops
	// now; inPlace counts allocations that run on, updated to the new
	// version of the job.
	created, stopped, inPlace int
	// leftOver counts allocations of earlier versions that Nomad still
	// wants running once the change is done.
	leftOver int
}

func (h historyDelta) String() string {
	return fmt.Sprintf("%d versions, %d allocations created, %d stopped, %d updated in place, %d left running", h.versions, h.created, h.stopped, h.inPlace, h.leftOver)
}

// nomadHistory is a Nomad job's version and allocations at one moment.
type nomadHistory struct {
	// exists says Nomad has the job; version is its current version.
	exists  bool
	version uint64
	// allocs are the job's allocations by ID: their desired status and
	// job version.
	allocs map[string]*nomadapi.AllocationListStub
}

func readHistory(t *testing.T, c *nomadapi.Client, namespace, jobID string) nomadHistory {
	t.Helper()
	q := &nomadapi.QueryOptions{Namespace: namespace}
	h := nomadHistory{allocs: map[string]*nomadapi.AllocationListStub{}}
	info, _, err := c.Jobs().Info(jobID, q)
	if err != nil && !isNomadNotFound(err) {
		must.NoError(t, err)
	}
	if err == nil {
		h.exists, h.version = true, *info.Version
	}
	allocs, _, err := c.Jobs().Allocations(jobID, true, q)
	if err != nil && !isNomadNotFound(err) {
		must.NoError(t, err)
	}
	for _, a := range allocs {
		h.allocs[a.ID] = a
	}
	return h
}

func isNomadNotFound(err error) bool {
	var ue nomadapi.UnexpectedResponseError
	return errors.As(err, &ue) && ue.StatusCode() == 404
}

// since is what happened between before and h.
func (h nomadHistory) since(before nomadHistory) historyDelta {
	d := historyDelta{versions: h.version - before.version}
	if !before.exists && h.exists {
		d.versions++ // version 0
	}
	for id, a := range h.allocs {
		old, ok := before.allocs[id]
		switch {
		case !ok:
			d.created++
		case old.DesiredStatus == nomadapi.AllocDesiredStatusRun && a.DesiredStatus != nomadapi.AllocDesiredStatusRun:
			d.stopped++
		case a.DesiredStatus == nomadapi.AllocDesiredStatusRun && a.JobVersion != old.JobVersion:
			d.inPlace++
		}
	}
	return d
}

// live counts the allocations of the job's current version that run,
// those Nomad stopped that have not finished yet, and those of earlier
// versions that Nomad still wants running (after a stop of a batch job,
// see TestNomadHistory_Rescales).
func (h nomadHistory) live() (running, stopping, leftOver int) {
	for _, a := range h.allocs {
		terminal := a.ClientStatus != nomadapi.AllocClientStatusPending && a.ClientStatus != nomadapi.AllocClientStatusRunning
		switch {
		case a.DesiredStatus == nomadapi.AllocDesiredStatusRun && a.JobVersion != h.version && !terminal:
			leftOver++
		case a.DesiredStatus == nomadapi.AllocDesiredStatusRun && a.ClientStatus == nomadapi.AllocClientStatusRunning:
			running++
		case a.DesiredStatus != nomadapi.AllocDesiredStatusRun && !terminal:
			stopping++
		}
	}
	return running, stopping, leftOver
}

// measureChange enacts p for job through d, confirms the checkpoint the
// change asks for (as the job's trainers would), waits until the change
// is done and Nomad runs p's tasks and nothing else, and returns what it
// left in Nomad's history.
func measureChange(t *testing.T, c *nomadapi.Client, d *nomad.Driver, host *recordingHost, job *structs.Job, nomadJobID string, p *structs.Plan, step *int64) historyDelta {
	t.Helper()
	before := readHistory(t, c, job.Namespace, nomadJobID)
	enact(t, d, p, job)
	*step++
	host.report(structs.Sample{JobID: job.ID, Step: *step, CheckpointStep: *step})
	done := settle(t, d)
	must.Eq(t, structs.ChangeDone, done.Change.Phase, must.Sprint(done.Change.Message))
	want := p.Placements[0].NumPS + p.Placements[0].NumWorkers
	var after nomadHistory
	agent.WaitFor(t, time.Minute, fmt.Sprintf("%d tasks running, none stopping", want), func() error {
		after = readHistory(t, c, job.Namespace, nomadJobID)
		running, stopping, _ := after.live()
		if running != want || stopping != 0 {
			var desc []string
			for _, a := range after.allocs {
				desc = append(desc, fmt.Sprintf("%s v%d %s/%s", a.Name, a.JobVersion, a.DesiredStatus, a.ClientStatus))
			}
			info, _, _ := c.Jobs().Info(nomadJobID, nil)
			evals, _, _ := c.Jobs().Evaluations(nomadJobID, nil)
			for _, e := range evals {
				desc = append(desc, fmt.Sprintf("eval %s %s %s %v", e.TriggeredBy, e.Status, e.StatusDescription, e.FailedTGAllocs))
			}
			if info != nil {
				desc = append(desc, fmt.Sprintf("job v%d stop=%v status=%s", *info.Version, *info.Stop, *info.Status))
			}
			return fmt.Errorf("%d running of %d, %d stopping: %s", running, want, stopping, strings.Join(desc, ", "))
		}
		return nil
	})
	delta := after.since(before)
	_, _, delta.leftOver = after.live()
	return delta
}

// placementOn is a plan that runs job "sh" with ps and workers on each
// node of nodes (none: paused).
func placementOn(index uint64, ps, workers int, nodes ...string) *structs.Plan {
	p := &structs.Placement{Namespace: "default", JobID: "sh"}
	for _, n := range nodes {
		p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: n, PS: ps, Workers: workers})
		p.NumPS += ps
		p.NumWorkers += workers
	}
	return &structs.Plan{Index: index, Placements: []*structs.Placement{p}}
}

// TestNomadHistory_Rescales measures, on a real Nomad cluster of two
// clients, what the typical changes of a job Caravan runs leave in
// Nomad's history: its start, 1 → 2 workers and 2 → 1 on one node, a
// pause and a resume, and a move to the other node. It logs the versions
// and allocations of each and asserts the bounds the driver achieves.
//
//	PATH=$PWD/.tools/bin:$PATH go test -tags e2e -run TestNomadHistory_Rescales ./e2e/ -count=1 -v
func TestNomadHistory_Rescales(t *testing.T) {
	t.Parallel()
	cluster := agent.StartNomadCluster(t, agent.ClusterOptions{Clients: 2, GPUClients: []int{}})
	host := &recordingHost{}
	d, err := nomad.New(nomad.Config{Address: cluster.Address, CheckpointDir: t.TempDir(), Host: host})
	must.NoError(t, err)
	t.Cleanup(d.Stop)
	job := shellJob(t, t.TempDir())
	a, b := cluster.Nodes[0].ID, cluster.Nodes[1].ID

	// bounds are the most each change may leave: a change makes one
	// version; it creates the tasks it adds, and (a destructive update)
	// those it keeps, and stops what ran.
	steps := []struct {
		name string
		plan *structs.Plan
		max  historyDelta
	}{
		{"start 1 ps + 1 worker", placementOn(1, 1, 1, a), historyDelta{versions: 1, created: 2}},
		{"1 → 2 workers on one node", placementOn(2, 1, 2, a), historyDelta{versions: 1, created: 3, stopped: 2}},
		{"2 → 1 workers on one node", placementOn(3, 1, 1, a), historyDelta{versions: 1, created: 2, stopped: 3}},
		// A stop scales the job to 0 first: stopped right after a
		// scale-down, Nomad v1.11 leaves one allocation running.
		{"pause", placementOn(4, 0, 0), historyDelta{versions: 2, stopped: 2}},
		{"resume 1 ps + 1 worker", placementOn(5, 1, 1, a), historyDelta{versions: 1, created: 2}},
		{"move to the other node", placementOn(6, 1, 1, b), historyDelta{versions: 1, created: 2, stopped: 2}},
		{"1 → 2 workers on the other node", placementOn(7, 1, 2, b), historyDelta{versions: 1, created: 3, stopped: 2}},
		{"2 → 1 workers on the other node", placementOn(8, 1, 1, b), historyDelta{versions: 1, created: 2, stopped: 3}},
	}
	var step int64
	var total historyDelta
	for _, s := range steps {
		got := measureChange(t, cluster.Client, d, host, job, "caravan-sh", s.plan, &step)
		t.Logf("%-28s %s", s.name+":", got)
		must.Eq(t, s.max.versions, got.versions, must.Sprintf("%s: versions", s.name))
		must.LessEq(t, s.max.created, got.created, must.Sprintf("%s: allocations created", s.name))
		must.LessEq(t, s.max.stopped, got.stopped, must.Sprintf("%s: allocations stopped", s.name))
		must.LessEq(t, s.max.leftOver, got.leftOver, must.Sprintf("%s: allocations of earlier versions left running", s.name))
		total.versions += got.versions
		total.created += got.created
		total.stopped += got.stopped
		total.inPlace += got.inPlace
	}
	t.Logf("%-28s %s", "all:", total)

	// The job leaves the plan (stopped, or complete): its Nomad job is
	// stopped, and what runs of it is left to Nomad.
	before := readHistory(t, cluster.Client, "default", "caravan-sh")
	_, err = d.Enact(context.Background(), &structs.Plan{Index: 9}, nil)
	must.NoError(t, err)
	var after nomadHistory
	agent.WaitFor(t, time.Minute, "the Nomad job stopped and its allocations settled", func() error {
		info, _, err := cluster.Client.Jobs().Info("caravan-sh", nil)
		if err != nil {
			return err
		}
		after = readHistory(t, cluster.Client, "default", "caravan-sh")
		if running, stopping, _ := after.live(); !*info.Stop || running != 0 || stopping != 0 {
			return fmt.Errorf("stopped %v, %d running, %d stopping", *info.Stop, running, stopping)
		}
		return nil
	})
	stopped := after.since(before)
	_, _, stopped.leftOver = after.live()
	t.Logf("%-28s %s", "stop (leaves the plan):", stopped)
	must.Eq(t, historyDelta{versions: 2, stopped: 2}, stopped, must.Sprint("the stop of a job that left the plan"))
}

// declaredShellFile is a Nomad job file of an all-reduce job of 1 to 4
// workers that sleep, with a caravan scaling policy, as a user writes it.
const declaredShellFile = `
job "hist" {
  type = "batch"

  meta {
    owner = "user"
  }

  group "worker" {
    scaling {
      min = 1
      max = 4

      policy {
        caravan {
          role = "worker"

          training {
            architecture      = "allreduce"
            global_batch_size = 64
            steps_per_epoch   = 10
          }

          checkpoint {
            timeout = "30s"
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'true' USR1; while true; do sleep 0.1; done"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// declaredJob waits until d reads a user's version of Nomad job id newer
// than index that declares a job, and returns the job as the leader
// registers it, at Caravan version version.
func declaredJob(t *testing.T, d *nomad.Driver, id string, index uint64, version uint64) *structs.Job {
	t.Helper()
	var job *structs.Job
	agent.WaitFor(t, time.Minute, "the user's version of "+id+" declared", func() error {
		decls, _, err := d.Declared(context.Background())
		if err != nil {
			return err
		}
		decl := decls[structs.JobKey{Namespace: "default", ID: id}]
		if decl == nil || decl.Kind != structs.DeclaredJob || decl.Index <= index {
			return fmt.Errorf("declaration: %+v", decl)
		}
		job = decl.Job.Copy()
		return nil
	})
	job.Version = version
	return job
}

// TestNomadHistory_RevertUserVersion runs a job declared with `nomad job
// run`, rescales it more times than Nomad keeps versions of, and checks
// that the user's version 0, which Caravan tagged when it took it over,
// is still there: `nomad job revert hist 0` runs it again, and Caravan
// takes the reverted version over, tagging it in turn, at the next
// generation. Caravan keeps at most nomad.KeepUserVersionTags tags.
func TestNomadHistory_RevertUserVersion(t *testing.T) {
	t.Parallel()
	n := agent.StartNomad(t, agent.NomadOptions{})
	host := &recordingHost{}
	d := newDriver(t, n, host)
	cli := nomadCLI{addr: n.Address}
	cli.jobRun(t, "hist", declaredShellFile)
	job := declaredJob(t, d, "hist", 0, 1)

	plan := func(index uint64, workers int) *structs.Plan {
		return &structs.Plan{Index: index, Placements: []*structs.Placement{{
			Namespace: "default", JobID: "hist", NumWorkers: workers,
			Nodes: []*structs.NodeTasks{{NodeID: n.NodeID, Workers: workers}},
		}}}
	}
	var step int64
	rescale := func(index uint64, workers int) historyDelta {
		t.Helper()
		before := readHistory(t, n.Client, "default", "hist")
		reports, err := d.Enact(context.Background(), plan(index, workers), []*structs.Job{job})
		must.NoError(t, err)
		must.SliceLen(t, 1, reports)
		step++
		host.report(structs.Sample{JobID: "hist", Step: step, CheckpointStep: step})
		got := settleJob(t, d, "hist")
		must.Eq(t, structs.ChangeDone, got.Change.Phase, must.Sprint(got.Change.Message))
		var after nomadHistory
		agent.WaitFor(t, time.Minute, fmt.Sprintf("%d workers running", workers), func() error {
			after = readHistory(t, n.Client, "default", "hist")
			if running, stopping, _ := after.live(); running != workers || stopping != 0 {
				return fmt.Errorf("%d running, %d stopping", running, stopping)
			}
			return nil
		})
		return after.since(before)
	}
	tags := func() map[string]uint64 {
		t.Helper()
		versions, _, _, err := n.Client.Jobs().Versions("hist", false, nil)
		must.NoError(t, err)
		out := map[string]uint64{}
		for _, v := range versions {
			if v.VersionTag != nil {
				out[v.VersionTag.Name] = *v.Version
			}
		}
		return out
	}

	// Caravan takes version 0 over, and tags it; then 7 rescales, more
	// than the 6 versions Nomad keeps untagged.
	first := rescale(1, 1)
	t.Logf("take-over: %s", first)
	must.Eq(t, map[string]uint64{"v0-by-user": 0}, tags())
	planOut := jobPlan(t, n.Address, declaredShellFile)
	t.Logf("nomad job plan of the user's file after the take-over:\n%s", planOut)
	must.StrContains(t, planOut, `- Task Group: "worker-`+n.NodeID+`"`, must.Sprint("Caravan's group, which the file does not have"))
	must.StrContains(t, planOut, `+ Task Group: "worker"`, must.Sprint("the file's group, which Caravan replaced"))
	for i := range 7 {
		got := rescale(uint64(i+2), 2-i%2)
		t.Logf("rescale %d: %s", i+1, got)
		must.Eq(t, 1, got.versions)
	}
	info, _, err := n.Client.Jobs().Info("hist", nil)
	must.NoError(t, err)
	must.Eq(t, 8, *info.Version)
	must.Eq(t, "8", info.Meta["caravan_generation"])
	v0, _, err := n.Client.Jobs().VersionByTag("hist", "v0-by-user", nil)
	must.NoError(t, err, must.Sprint("the user's version 0 is kept"))
	must.Eq(t, "", v0.Meta["caravan_job_id"])
	must.Eq(t, "user", v0.Meta["owner"])

	// The user goes back to their version 0: Nomad runs it as written
	// (version 9), and Caravan takes it over at the next generation.
	out := cli.run(t, "job", "revert", "-detach", "hist", "0")
	t.Logf("nomad job revert hist 0: %s", strings.TrimSpace(out))
	info, _, err = n.Client.Jobs().Info("hist", nil)
	must.NoError(t, err)
	must.Eq(t, 9, *info.Version)
	must.Eq(t, "", info.Meta["caravan_job_id"], must.Sprint("the reverted version is the user's"))
	job = declaredJob(t, d, "hist", job.Nomad.JobModifyIndex, 2)
	rescale(20, 1)
	info, _, err = n.Client.Jobs().Info("hist", nil)
	must.NoError(t, err)
	must.Eq(t, 10, *info.Version)
	must.Eq(t, "hist", info.Meta["caravan_job_id"], must.Sprint("Caravan took the reverted version over"))
	must.Eq(t, "9", info.Meta["caravan_generation"], must.Sprint("generations go on across the user's versions"))
	must.Eq(t, map[string]uint64{"v0-by-user": 0, "v9-by-user": 9}, tags())

	// Two more returns to the user's version (run 11 and 13, taken over
	// as 12 and 14): Caravan keeps the last 3 user versions tagged and
	// untags version 0, which Nomad may then collect.
	for i, want := range []uint64{11, 13} {
		cli.run(t, "job", "revert", "-detach", "hist", "9")
		job = declaredJob(t, d, "hist", job.Nomad.JobModifyIndex, uint64(3+i))
		rescale(uint64(21+i), 1)
		info, _, err = n.Client.Jobs().Info("hist", nil)
		must.NoError(t, err)
		must.Eq(t, want+1, *info.Version)
		must.Eq(t, "hist", info.Meta["caravan_job_id"])
	}
	must.Eq(t, nomad.KeepUserVersionTags, 3)
	must.Eq(t, map[string]uint64{"v9-by-user": 9, "v11-by-user": 11, "v13-by-user": 13}, tags())
}

// TestNomadHistory_NomadUpdates measures, on a Nomad dev agent and with
// no Caravan, the Nomad operations a quieter rescale would be built from
// (issue 28): a batch job whose task renders per-generation values from
// a Nomad Variable at the job's path (which its workload identity reads
// by default) into its environment, with change_mode restart.
//
//   - a new count and nothing else changed (Register, or Scale) is an
//     in-place update: one version, an allocation per added task, none
//     stopped;
//   - a new count with changed job metadata (what the driver writes at
//     every generation: caravan_generation, caravan_placement, …) is a
//     destructive update, since Nomad compares a task's metadata merged
//     with its group's and its job's: every allocation is replaced;
//   - a new value of the variable makes no version and no allocation:
//     every task restarts in place with the new environment.
func TestNomadHistory_NomadUpdates(t *testing.T) {
	t.Parallel()
	n := agent.StartNomad(t, agent.NomadOptions{})
	c := n.Client
	const id = "probe"
	setVars := func(gen, workers int) {
		t.Helper()
		_, _, err := c.Variables().Update(&nomadapi.Variable{Path: "nomad/jobs/" + id, Items: nomadapi.VariableItems{
			"generation": fmt.Sprint(gen), "workers": fmt.Sprint(workers),
		}}, nil)
		must.NoError(t, err)
	}
	tmpl := `{{ with nomadVar "nomad/jobs/probe" }}CARAVAN_GENERATION={{ .generation }}
CARAVAN_NUM_WORKERS={{ .workers }}
{{ end }}`
	job := func(count int, meta map[string]string) *nomadapi.Job {
		return &nomadapi.Job{
			ID: new(id), Name: new(id), Type: new(nomadapi.JobTypeBatch), Datacenters: []string{"dc1"}, Meta: meta,
			TaskGroups: []*nomadapi.TaskGroup{{
				Name: new("worker"), Count: new(count),
				RestartPolicy:    &nomadapi.RestartPolicy{Attempts: new(2), Mode: new("fail")},
				ReschedulePolicy: &nomadapi.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)},
				Tasks: []*nomadapi.Task{{
					Name: "t", Driver: "raw_exec",
					Config:    map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo gen=$CARAVAN_GENERATION workers=$CARAVAN_NUM_WORKERS; while true; do sleep 0.1; done"}},
					Resources: &nomadapi.Resources{CPU: new(20), MemoryMB: new(16)},
					Templates: []*nomadapi.Template{{
						EmbeddedTmpl: new(tmpl), DestPath: new("local/caravan.env"), Envvars: new(true),
						ChangeMode: new("restart"), Splay: new(time.Duration(0)),
					}},
				}},
			}},
		}
	}
	// step applies a change and returns what it left in Nomad's history
	// once want allocations of the job's version run.
	step := func(what string, want int, change func()) historyDelta {
		t.Helper()
		before := readHistory(t, c, "default", id)
		change()
		var after nomadHistory
		agent.WaitFor(t, time.Minute, fmt.Sprintf("%d allocations running", want), func() error {
			after = readHistory(t, c, "default", id)
			if running, stopping, _ := after.live(); running != want || stopping != 0 {
				return fmt.Errorf("%d running, %d stopping", running, stopping)
			}
			return nil
		})
		got := after.since(before)
		t.Logf("%-44s %s", what+":", got)
		return got
	}
	register := func(j *nomadapi.Job) func() {
		return func() {
			_, _, err := c.Jobs().Register(j, nil)
			must.NoError(t, err)
		}
	}

	setVars(1, 1)
	step("start 1", 1, register(job(1, map[string]string{"caravan_generation": "1"})))
	got := step("register count 1 → 2, same spec", 2, register(job(2, map[string]string{"caravan_generation": "1"})))
	must.Eq(t, historyDelta{versions: 1, created: 1, inPlace: 1}, got)
	got = step("register count 2 → 3, new job meta", 3, register(job(3, map[string]string{"caravan_generation": "2"})))
	must.Eq(t, historyDelta{versions: 1, created: 3, stopped: 2}, got)
	got = step("scale count 3 → 4", 4, func() {
		_, _, err := c.Jobs().Scale(id, "worker", new(4), "probe", false, nil, nil)
		must.NoError(t, err)
	})
	must.Eq(t, historyDelta{versions: 1, created: 1, inPlace: 3}, got)

	// A new generation's values through the variable: every task
	// restarts in place and starts with them.
	before := readHistory(t, c, "default", id)
	setVars(2, 4)
	var running []*nomadapi.Allocation
	agent.WaitFor(t, time.Minute, "every task restarted", func() error {
		allocs, _, err := c.Jobs().Allocations(id, false, nil)
		if err != nil {
			return err
		}
		running = nil
		for _, a := range allocs {
			if a.DesiredStatus != nomadapi.AllocDesiredStatusRun {
				continue
			}
			if ts := a.TaskStates["t"]; ts == nil || ts.Restarts == 0 || ts.State != "running" {
				return fmt.Errorf("allocation %s not restarted yet", a.Name)
			}
			alloc, _, err := c.Allocations().Info(a.ID, nil)
			if err != nil {
				return err
			}
			running = append(running, alloc)
		}
		return nil
	})
	must.SliceLen(t, 4, running)
	for _, alloc := range running {
		agent.WaitFor(t, 30*time.Second, "the restarted task's output", func() error {
			out, err := catFile(c, alloc, "alloc/logs/t.stdout.0")
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if last := lines[len(lines)-1]; last != "gen=2 workers=4" {
				return fmt.Errorf("%s printed %q", alloc.Name, last)
			}
			return nil
		})
	}
	got = readHistory(t, c, "default", id).since(before)
	t.Logf("%-44s %s", "variable: generation 2, 4 workers:", got)
	must.Eq(t, historyDelta{}, got)
}

// jobPlan runs `nomad job plan` of a job file against the agent at addr
// and returns its output; it exits 1 when the plan changes allocations.
func jobPlan(t *testing.T, addr, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agent.NomadBinary(t), "job", "plan", "-no-color", path)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("nomad job plan: %v\n%s", err, out)
	}
	return string(out)
}
