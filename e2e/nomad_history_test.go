//go:build e2e

package e2e

import (
	"errors"
	"fmt"
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
		{"pause", placementOn(4, 0, 0), historyDelta{versions: 1, stopped: 2, leftOver: 1}},
		// The pause's stop of the Nomad job leaves one allocation running
		// (Nomad v1.11, every run here), which the resume stops.
		{"resume 1 ps + 1 worker", placementOn(5, 1, 1, a), historyDelta{versions: 1, created: 2, stopped: 1}},
		{"move to the other node", placementOn(6, 1, 1, b), historyDelta{versions: 1, created: 2, stopped: 2}},
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
}
