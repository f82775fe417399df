package api

import (
	"net/http"
	"net/url"
	"strings"
)

// DefaultQueue is the queue of jobs whose namespace no queue names.
const DefaultQueue = "default"

// Queue is a team's share of the cluster (issue 32): the jobs of its
// Namespaces (names or path.Match patterns) may use its nominal Quota at
// any time, and borrow the idle quota of the queues of its Cohort.
type Queue struct {
	Name       string
	Namespaces []string
	// Weight is the queue's share weight when queues borrow; the server
	// stores 1 for 0.
	Weight float64
	// Cohort names the group of queues that lend to each other; "" for
	// none.
	Cohort string
	Quota  QueueQuota

	// Usage is what the queue's jobs hold and wait for under the latest
	// decision, as the server answers a queue; nil when unknown, and
	// ignored in an upsert.
	Usage *QueueUsage `json:",omitempty"`

	CreateIndex uint64
	ModifyIndex uint64
}

// QueueUsage is a queue's usage under the latest decision.
type QueueUsage struct {
	// Resources are the resources of the queue's GPU quotas and those its
	// jobs use or wait for, GPU types by name, then CPU and memory when
	// the queue limits them.
	Resources []QueueResource
	// PendingJobs counts the jobs paused or below their minimum.
	PendingJobs int
	// Jobs are the queue's active jobs, pending ones first; only Info
	// lists them, those of the namespaces the token may list jobs of.
	Jobs []*QueueJob `json:",omitempty"`
}

// QueueResource is a queue's standing in one resource, in GPUs, MHz or
// MB.
type QueueResource struct {
	// Resource is "gpu/" and a GPU type as nodes report it (or as a quota
	// gives one no node has), "cpu" or "memory".
	Resource string
	// Quota is the Type of the GPU quota that counts the resource; "" for
	// a type no quota of the queue matches, and for CPU and memory.
	Quota string `json:",omitempty"`
	// Nominal is the queue's quota of the resource; Used what its jobs
	// hold; Borrowed the part of Used beyond Nominal; Lent the part of
	// its idle nominal that queues of its cohort borrow; Pending what its
	// paused jobs (or those below their minimum) lack to run at their
	// minimum.
	Nominal, Used, Borrowed, Lent, Pending int
}

// IsGPU reports whether r counts GPUs.
func (r *QueueResource) IsGPU() bool { return strings.HasPrefix(r.Resource, "gpu/") }

// QueueJob is one job of a queue, as the latest decision places it.
type QueueJob struct {
	Namespace, ID string
	Status        string
	// PS and Workers are what the latest decision gives the job.
	PS, Workers int
	// Pending marks a job paused or below its minimum; Reason is its
	// placement's reason.
	Pending bool
	Reason  string `json:",omitempty"`
}

// QueueQuota is a queue's nominal quota per resource; a resource it does
// not name is not limited by the queue.
type QueueQuota struct {
	// GPU are the quotas per GPU type, in order: a node's GPUs count
	// against the first whose Type matches.
	GPU []*GPUQuota `json:",omitempty"`
	// CPU (MHz) and MemoryMB across the queue's tasks; 0 is not limited.
	CPU      int `json:",omitempty"`
	MemoryMB int `json:",omitempty"`
}

// GPUQuota is a queue's quota of one GPU type.
type GPUQuota struct {
	// Type matches a node whose GPU type contains it, ignoring case; "*"
	// matches every GPU type.
	Type    string
	Nominal int
	// BorrowingLimit caps the GPUs borrowed beyond Nominal, nil for no
	// cap; LendingLimit caps the idle nominal GPUs lent, nil for all.
	BorrowingLimit *int `json:",omitempty"`
	LendingLimit   *int `json:",omitempty"`
}

// QueueUpsertRequest is the body of PUT /v1/queues: the queues to create
// or replace, all or none.
type QueueUpsertRequest struct {
	Queues []*Queue
}

// QueueUpsertResponse is the answer to a QueueUpsertRequest: the queues
// as stored, and the index of the write.
type QueueUpsertResponse struct {
	Queues []*Queue
	Index  uint64
}

// Queues is the client of the queue endpoints.
type Queues struct{ c *Client }

// Queues returns the client of the queue endpoints.
func (c *Client) Queues() *Queues { return &Queues{c: c} }

// List returns the queues, ordered by name, with q's list options
// (Prefix matches names).
func (qs *Queues) List(q *QueryOptions) ([]*Queue, *QueryMeta, error) {
	return get[[]*Queue](qs.c, "/v1/queues", nil, q)
}

// Info returns a queue; IsNotFound tells a queue that does not exist.
func (qs *Queues) Info(name string, q *QueryOptions) (*Queue, *QueryMeta, error) {
	return getOne[Queue](qs.c, "/v1/queue/"+url.PathEscape(name), nil, q)
}

// Upsert creates or replaces queues, all or none: a queue that is not
// valid, or that gives a namespace another queue gives, fails the whole
// request.
func (qs *Queues) Upsert(queues []*Queue, w *WriteOptions) (*QueueUpsertResponse, *WriteMeta, error) {
	return writeOne[QueueUpsertResponse](qs.c, http.MethodPut, "/v1/queues", &QueueUpsertRequest{Queues: queues}, w)
}

// Delete deletes a queue; the jobs of its namespaces fall to the queue
// the remaining queues give them, or DefaultQueue.
func (qs *Queues) Delete(name string, w *WriteOptions) (*WriteMeta, error) {
	return qs.c.write(http.MethodDelete, "/v1/queue/"+url.PathEscape(name), nil, nil, nil, w)
}
