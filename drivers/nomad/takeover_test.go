package nomad

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestEnact_DeclaredTakeoverWaitsForEarlierGeneration runs Caravan's
// generation of a job declared in Nomad, then a new version of the user's:
// the takeover waits in phase checkpointing while the earlier
// generation's allocations run (they checkpoint as Nomad stops them),
// submits the next generation once they stopped, with the checkpoint
// they reported at their last step confirmed; submits it at once when they
// stopped before the driver saw the new version; and submits it anyway
// once the checkpoint timeout passed.
func TestEnact_DeclaredTakeoverWaitsForEarlierGeneration(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stop says whether the earlier generation's allocations stop,
		// first whether before the takeover.
		stop, first bool
	}{{"earlier generation stops", true, false}, {"stopped first", true, true}, {"timeout passes", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeNomad(t)
			host := &testHost{}
			d := startDriver(t, f, Config{Host: host})
			ctx := context.Background()
			job := declaredAt(t, d, f.putJob(declaredFixture(t)))[resnetKey].Job
			_, err := d.Enact(ctx, &structs.Plan{Index: 1, Placements: []*structs.Placement{placementOn(job, 1, 1)}}, []*structs.Job{job})
			must.NoError(t, err)
			waitGeneration(t, d, f, "1")
			f.runAll("resnet50")
			waitReport(t, d, "resnet50", "generation 1 running", func(r *structs.JobReport) bool { return r.Change.Phase == structs.ChangeDone })
			host.report(structs.Sample{Namespace: "default", JobID: "resnet50", Step: 40})

			// The user runs a new version; Nomad is stopping Caravan's
			// allocations, which still run.
			rerun := declaredFixture(t)
			rerun.Meta["team"] = "speech"
			job = declaredAt(t, d, f.putJob(rerun))[resnetKey].Job
			// A timeout the test waits out only where it passes, so that
			// a slow machine cannot make the others take it.
			job.Elastic.Checkpoint.Timeout = time.Minute
			if !tc.stop {
				job.Elastic.Checkpoint.Timeout = 2 * time.Second
			}
			userVersion := nomadVersion(f, "resnet50")
			stop := func() {
				// The stopped chief checkpoints at step 42 and reports it;
				// then its allocations are complete.
				host.report(structs.Sample{Namespace: "default", JobID: "resnet50", Step: 42, CheckpointStep: 42})
				f.mu.Lock()
				for _, a := range f.allocs {
					a.DesiredStatus, a.ClientStatus = api.AllocDesiredStatusStop, api.AllocClientStatusComplete
				}
				f.bump()
				f.mu.Unlock()
				waitReport(t, d, "resnet50", "the allocations seen stopped", func(r *structs.JobReport) bool { return r.Placement == nil })
			}
			if tc.first {
				stop()
			}
			_, err = d.Enact(ctx, &structs.Plan{Index: 2, Placements: []*structs.Placement{placementOn(job, 1, 1)}}, []*structs.Job{job})
			must.NoError(t, err)
			if !tc.first {
				r := waitReport(t, d, "resnet50", "the takeover waiting", func(r *structs.JobReport) bool { return r.Change.Phase == structs.ChangeCheckpointing })
				must.StrContains(t, r.Change.Message, "earlier generation")
				must.SliceLen(t, 1, host.eventsOf(structs.EventCheckpointRequested))
				must.Eq(t, userVersion, nomadVersion(f, "resnet50"), must.Sprint("nothing submitted while the earlier generation runs"))
			}
			if tc.stop && !tc.first {
				stop()
			}
			waitReport(t, d, "resnet50", "the takeover going on", func(r *structs.JobReport) bool { return r.Change.Phase == structs.ChangeStarting })
			waitGeneration(t, d, f, "2")
			f.mu.Lock()
			must.Eq(t, "speech", f.jobs["resnet50"].Meta["team"])
			f.mu.Unlock()
			if tc.stop {
				must.Eq(t, []string{"checkpoint at step 42 confirmed; the earlier generation stopped at it"}, host.eventsOf(structs.EventCheckpointConfirmed))
			} else {
				must.SliceEmpty(t, host.eventsOf(structs.EventCheckpointConfirmed))
				must.SliceLen(t, 2, host.eventsOf(structs.EventCheckpointRequested), must.Sprint("the second says the timeout passed"))
			}
		})
	}
}

// waitGeneration waits until the fake Nomad's job resnet50 runs Caravan's
// generation gen, reading d's status meanwhile as the leader does: a
// takeover held back until the driver's first view of Nomad's
// allocations moves on only then.
func waitGeneration(t *testing.T, d *Driver, f *fakeNomad, gen string) {
	t.Helper()
	agent.WaitFor(t, 10*time.Second, "generation "+gen+" submitted", func() error {
		if _, err := d.Status(context.Background()); err != nil {
			return err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if got := f.jobs["resnet50"].Meta[metaGeneration]; got != gen {
			return fmt.Errorf("generation %q", got)
		}
		return nil
	})
}

// nomadVersion returns the version of a job the fake Nomad holds.
func nomadVersion(f *fakeNomad, id string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.jobs[id].Version
}
