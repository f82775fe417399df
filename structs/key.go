package structs

import (
	"cmp"
	"strconv"
)

// JobKey names a job: its ID is unique within its namespace, as Nomad's
// NamespacedID. It is comparable, so it keys maps.
type JobKey struct {
	Namespace string
	ID        string
}

// NewJobKey returns the key of job id in namespace, the default namespace
// when namespace is empty.
func NewJobKey(namespace, id string) JobKey {
	return JobKey{Namespace: cmp.Or(namespace, DefaultNamespace), ID: id}
}

// Key returns the job's key.
func (j *Job) Key() JobKey { return JobKey{Namespace: j.Namespace, ID: j.ID} }

// Key returns the key of the placement's job.
func (p *Placement) Key() JobKey { return JobKey{Namespace: p.Namespace, ID: p.JobID} }

// String renders the key as Nomad renders namespaced IDs: "<namespace>/<id>".
func (k JobKey) String() string { return k.Namespace + "/" + k.ID }

// Compare orders keys by namespace, then ID.
func (k JobKey) Compare(o JobKey) int {
	return cmp.Or(cmp.Compare(k.Namespace, o.Namespace), cmp.Compare(k.ID, o.ID))
}

// Shape is how many parameter servers and workers a job runs: a
// configuration of the job, whatever nodes its tasks are on.
type Shape struct {
	PS      int
	Workers int
}

// Shape returns the placement's task counts.
func (p *Placement) Shape() Shape { return Shape{PS: p.NumPS, Workers: p.NumWorkers} }

// Tasks returns how many tasks the shape runs.
func (s Shape) Tasks() int { return s.PS + s.Workers }

// Compare orders shapes by tasks, then parameter servers.
func (s Shape) Compare(o Shape) int {
	return cmp.Or(cmp.Compare(s.Tasks(), o.Tasks()), cmp.Compare(s.PS, o.PS))
}

// String renders the shape for people: "2 ps and 4 workers", "0 ps and
// 1 worker".
func (s Shape) String() string {
	return strconv.Itoa(s.PS) + " ps and " + Plural(s.Workers, "worker")
}
