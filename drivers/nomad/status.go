package nomad

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// Status reports every Caravan job Nomad runs, judged by the allocations
// of its Nomad job's current version: complete when all of them finished
// successfully (a trainer exits 0 only once it converged or reached its
// epoch cap), running otherwise. Failed or lost allocations set Replan,
// up to MaxRestarts times, and then fail the job with the task's last
// error. It records a TasksRunning event when all tasks of a generation
// the driver submitted run.
func (d *Driver) Status(ctx context.Context) ([]*structs.JobReport, error) {
	jobs, err := d.list(ctx)
	if err != nil {
		return nil, err
	}
	var reports []*structs.JobReport
	for key, nj := range jobs {
		if nj.stub.Stop {
			continue // paused or stopped by Caravan
		}
		info, allocs, err := d.current(ctx, nj)
		if isNotFound(err) {
			continue // purged since the list
		} else if err != nil {
			return nil, err
		}
		r := &structs.JobReport{Namespace: key[0], JobID: key[1], Status: structs.JobStatusRunning}
		var running, complete, failed int
		for _, a := range allocs {
			switch a.ClientStatus {
			case api.AllocClientStatusRunning:
				running++
			case api.AllocClientStatusComplete:
				complete++
			case api.AllocClientStatusFailed, api.AllocClientStatusLost:
				failed++
				r.Message = failure(a)
			}
		}
		if last, ok := d.lastSample(key); ok {
			r.Step = last.Step
		}
		js := d.state(key)
		want := expected(info)
		switch {
		case failed > 0 && js.restarts >= d.cfg.MaxRestarts:
			r.Status = structs.JobStatusFailed
			r.Message = fmt.Sprintf("tasks failed after %d restarts from the checkpoint: %s", js.restarts, r.Message)
		case failed > 0:
			r.Replan = true
			js.lost, js.lostMsg = true, r.Message
		case want > 0 && complete == want:
			r.Status = structs.JobStatusComplete
			r.Message = fmt.Sprintf("all %d tasks finished at step %d", want, r.Step)
		case want > 0 && running == want && js.starting != nil && js.starting.generation == nj.generation:
			d.tasksRunning(ctx, key, js.starting, want)
			js.starting = nil
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// tasksRunning records how long a start or rescale took, from the
// checkpoint request (rescales) or the submission until every task ran.
func (d *Driver) tasksRunning(ctx context.Context, key [2]string, st *start, tasks int) {
	took := time.Since(st.since)
	job := &structs.Job{Namespace: key[0], ID: key[1]}
	what := "start"
	if st.rescale {
		what = "rescale"
	}
	d.event(ctx, job, structs.EventTasksRunning, fmt.Sprintf("all %d tasks of generation %d run; the %s took %s", tasks, st.generation, what, took.Round(time.Millisecond)), map[string]string{
		"generation": strconv.Itoa(st.generation),
		"rescale":    strconv.FormatBool(st.rescale),
		"seconds":    strconv.FormatFloat(took.Seconds(), 'f', 3, 64),
	})
}

// failure describes why an allocation failed: the last event of a failed
// task and how it last exited, or the allocation's own status.
func failure(a *api.AllocationListStub) string {
	for name, ts := range a.TaskStates {
		if !ts.Failed || len(ts.Events) == 0 {
			continue
		}
		msg := eventMessage(ts.Events[len(ts.Events)-1])
		for i := len(ts.Events) - 1; i >= 0; i-- {
			if ev := ts.Events[i]; ev.Type == api.TaskTerminated {
				msg += " (last exit: " + eventMessage(ev) + ")"
				break
			}
		}
		return fmt.Sprintf("task %s of %s on node %s: %s", name, a.TaskGroup, a.NodeID, msg)
	}
	return fmt.Sprintf("allocation %s of %s on node %s is %s: %s", a.ID, a.TaskGroup, a.NodeID, a.ClientStatus, a.ClientDescription)
}

func eventMessage(ev *api.TaskEvent) string {
	if ev.DisplayMessage != "" {
		return ev.DisplayMessage
	}
	return ev.Type
}

func (d *Driver) lastSample(key [2]string) (structs.Sample, bool) {
	d.mu.Lock()
	host := d.host
	d.mu.Unlock()
	if host == nil {
		return structs.Sample{}, false
	}
	return host.LastSample(key[0], key[1])
}
