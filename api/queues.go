package api

import (
	"net/http"
	"net/url"
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

	CreateIndex uint64
	ModifyIndex uint64
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
