package planner

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
