package planner

import "github.com/caravan-sched/caravan/structs"

// JobTasks are the two tasks of a job on a cluster. PS is nil for
// all-reduce jobs; a PS job without a parameter_server template runs its
// parameter servers from the worker template.
type JobTasks struct {
	Worker *Task
	PS     *Task
}

// JobTasks builds the tasks of job j.
func (c *Cluster) JobTasks(j *Job) JobTasks {
	t := JobTasks{Worker: c.NewTask(j.Job, j.Job.Worker)}
	if j.HasPS() {
		if j.Job.ParameterServer != nil {
			t.PS = c.NewTask(j.Job, j.Job.ParameterServer)
		} else {
			t.PS = t.Worker
		}
	}
	return t
}

// For returns the tasks of one entry of a placement: the job's tasks at
// the entry's sizes (Task.Sized). PS is nil for all-reduce jobs.
func (t JobTasks) For(nt *structs.NodeTasks) (ps, worker *Task) {
	return t.PS.Sized(nt.PSSize), t.Worker.Sized(nt.WorkerSize)
}

// Sized returns the task at size s: t itself when s sets nothing, else a
// copy with s's CPU or memory that shares t's feasibility caches (a size
// does not change where a task may run). Nil stays nil.
func (t *Task) Sized(s structs.TaskSize) *Task {
	if t == nil || s.IsZero() {
		return t
	}
	c := *t
	if s.CPU != 0 {
		c.CPU = s.CPU
	}
	if s.MemoryMB != 0 {
		c.MemoryMB = s.MemoryMB
	}
	return &c
}
