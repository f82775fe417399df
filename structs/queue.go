package structs

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"unicode"
)

// DefaultQueue is the queue of jobs whose namespace no queue names. Unless
// an operator defines a queue of that name, it has no nominal quota: its
// jobs run only on capacity no queue's nominal quota covers, or that a
// queue of its cohort lends.
const DefaultQueue = "default"

// MaxQueues bounds how many queues a server holds, so that a hostile
// caller cannot grow the replicated state (and every round's planning)
// without bound.
const MaxQueues = 256

// MaxQueueNamespaces bounds the namespaces of one queue, and
// MaxQueueGPUQuotas its gpu quotas: Validate compares each with the
// others.
const (
	MaxQueueNamespaces = 256
	MaxQueueGPUQuotas  = 64
)

// Bounds of a queue's numbers: far above any cluster's, and low enough
// that sums and products of them over a cluster's queues and nodes stay
// exact (planner/queue).
const (
	// MaxQueueGPUs bounds a GPU quota's nominal and limits.
	MaxQueueGPUs = 1 << 20
	// MaxQueueCPU (MHz) and MaxQueueMemoryMB bound a queue's CPU and
	// memory quotas: about a million 64-core nodes, a million TB.
	MaxQueueCPU      = 1 << 36
	MaxQueueMemoryMB = 1 << 40
	// MaxQueueWeight bounds a queue's share weight.
	MaxQueueWeight = 1e6
	// MaxGPUTypeLength bounds a GPU quota's type name.
	MaxGPUTypeLength = 128
)

// Queue is a team's share of the cluster (issue 32; Kueue's ClusterQueue,
// Volcano's queue): the jobs of its namespaces may use its nominal quota
// at any time, may borrow the idle quota of the queues of its cohort, and
// lend theirs. A Queue is immutable once stored: the server replaces it
// with an updated copy.
type Queue struct {
	// Name is the queue's label (`queue "nlp" {}`), unique in the cluster.
	Name string
	// Namespaces are the Nomad namespaces whose jobs run in the queue, as
	// names or path.Match patterns ("nlp-*"). A namespace maps to exactly
	// one queue: the one with a pattern that matches it most specifically
	// (QueueFor); two queues may not give the same pattern.
	Namespaces []string
	// Weight is the queue's share weight when queues borrow (fair sharing
	// over queues); > 0, 1 by default.
	Weight float64
	// Cohort names the group of queues that lend to each other; "" for a
	// queue that neither borrows nor lends within a cohort.
	Cohort string
	// Quota is what the queue is promised.
	Quota QueueQuota

	// Usage is what the queue's jobs hold and wait for under the latest
	// decision, which the server computes when it answers a queue
	// (GET /v1/queue/<name>, GET /v1/queues); never stored:
	// Canonicalize drops it. Nil when not known.
	Usage *QueueUsage `json:",omitempty"`

	CreateIndex uint64
	ModifyIndex uint64
}

// QueueQuota is a queue's nominal quota per resource. A GPU type no gpu
// quota names has a nominal of 0: the queue's jobs run on it only on what
// they borrow. CPU and memory left at 0 are not limited by the queue.
type QueueQuota struct {
	// GPU are the quotas per GPU type, in the order given; a node's GPUs
	// count against the first whose Type matches the node's (GPUQuota.Matches).
	GPU []*GPUQuota `json:",omitempty"`
	// CPU (MHz) and MemoryMB are the queue's CPU and memory across its
	// tasks; 0 means not limited.
	CPU      int `json:",omitempty"`
	MemoryMB int `json:",omitempty"`
}

// GPUQuota is a queue's quota of one GPU type.
type GPUQuota struct {
	// Type names the GPU type: it matches a node whose GPUType contains it,
	// ignoring case ("A100" matches "NVIDIA A100-SXM4-40GB"), or every GPU
	// type when it is "*".
	Type string
	// Nominal is how many GPUs of the type the queue may use at any time.
	Nominal int
	// BorrowingLimit caps how many GPUs beyond Nominal the queue may borrow
	// from its cohort; nil for no cap.
	BorrowingLimit *int `json:",omitempty"`
	// LendingLimit caps how many of its idle Nominal GPUs the queue lends to
	// its cohort; nil for all of them.
	LendingLimit *int `json:",omitempty"`
}

// Matches reports whether the quota counts GPUs of a node's GPU type
// (Node.GPUType; "" for a node without GPUs matches nothing).
func (g *GPUQuota) Matches(gpuType string) bool {
	if gpuType == "" {
		return false
	}
	return g.Type == "*" || strings.Contains(strings.ToLower(gpuType), strings.ToLower(g.Type))
}

// GPUQuotaFor returns the quota that counts GPUs of gpuType, nil when none
// does.
func (q *QueueQuota) GPUQuotaFor(gpuType string) *GPUQuota {
	for _, g := range q.GPU {
		if g.Matches(gpuType) {
			return g
		}
	}
	return nil
}

// Canonicalize fills in defaults, and drops Usage, which only answers
// carry.
func (q *Queue) Canonicalize() {
	q.Usage = nil
	if q.Weight == 0 {
		q.Weight = DefaultWeight
	}
}

// Validate reports every problem of a canonicalized queue as a join of
// *FieldError, whose paths are spelled as in a queue file.
func (q *Queue) Validate() error {
	v := newValidator()
	switch {
	case q.Name == "":
		v.missing("name")
	case len(q.Name) > MaxIDLength:
		v.fail("name", "%q is longer than %d characters", q.Name, MaxIDLength)
	case !validID.MatchString(q.Name):
		v.fail("name", "%q must start with a letter or digit and contain only letters, digits, '_', '.' and '-'", q.Name)
	}
	if len(q.Namespaces) == 0 && q.Name != DefaultQueue {
		v.missing("namespaces")
	}
	if len(q.Namespaces) > MaxQueueNamespaces || len(q.Quota.GPU) > MaxQueueGPUQuotas {
		v.fail("", "a queue may name at most %d namespaces and %d gpu quotas; this one names %d and %d",
			MaxQueueNamespaces, MaxQueueGPUQuotas, len(q.Namespaces), len(q.Quota.GPU))
		return v.err()
	}
	for i, ns := range q.Namespaces {
		at := fmt.Sprintf("namespaces[%d]", i)
		if _, err := path.Match(ns, ""); err != nil || ns == "" || len(ns) > 128 {
			v.fail(at, "%q is not a namespace name or pattern (letters, digits, dashes, and * ? [ ] as in path.Match)", ns)
		} else if slices.Index(q.Namespaces, ns) < i {
			v.fail(at, "%q is given twice", ns)
		}
	}
	if !(q.Weight > 0) || q.Weight > MaxQueueWeight {
		v.fail("weight", "%v must be a positive number, at most %g", q.Weight, float64(MaxQueueWeight))
	}
	if q.Cohort != "" && (len(q.Cohort) > MaxIDLength || !validID.MatchString(q.Cohort)) {
		v.fail("cohort", "%q must be at most %d letters, digits, '_', '.' and '-', starting with a letter or digit", q.Cohort, MaxIDLength)
	}
	qv := v.at("quota")
	inRange(qv, "cpu", q.Quota.CPU, MaxQueueCPU)
	inRange(qv, "memory", q.Quota.MemoryMB, MaxQueueMemoryMB)
	for i, g := range q.Quota.GPU {
		gv := qv.at(fmt.Sprintf("gpu[%d]", i))
		if g == nil {
			gv.missing("")
			continue
		}
		switch {
		case strings.TrimSpace(g.Type) == "":
			gv.missing("type")
		case len(g.Type) > MaxGPUTypeLength || strings.IndexFunc(g.Type, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
			gv.fail("type", "must be at most %d printable characters", MaxGPUTypeLength)
		default:
			// A quota an earlier one shadows would never count a GPU:
			// each node's GPUs count against the first that matches.
			for j, o := range q.Quota.GPU[:i] {
				switch {
				case o == nil:
					continue
				case strings.EqualFold(o.Type, g.Type):
					gv.fail("type", "%q is given twice (gpu[%d])", g.Type, j)
				case o.Type == "*" || strings.Contains(strings.ToLower(g.Type), strings.ToLower(o.Type)):
					gv.fail("type", "%q is never counted: gpu[%d] (%q) matches every GPU type it matches, and a node's GPUs count against the first quota that matches", g.Type, j, o.Type)
				default:
					continue
				}
				break
			}
		}
		inRange(gv, "nominal", g.Nominal, MaxQueueGPUs)
		if g.BorrowingLimit != nil {
			inRange(gv, "borrowing_limit", *g.BorrowingLimit, MaxQueueGPUs)
		}
		if g.LendingLimit != nil {
			inRange(gv, "lending_limit", *g.LendingLimit, MaxQueueGPUs)
		}
		if g.LendingLimit != nil && *g.LendingLimit > g.Nominal {
			gv.fail("lending_limit", "%d is more than the nominal %d: a queue lends only its own quota", *g.LendingLimit, g.Nominal)
		}
	}
	return v.err()
}

// inRange fails field name unless 0 ≤ n ≤ most.
func inRange(v validator, name string, n, most int) {
	if n < 0 || n > most {
		v.fail(name, "%d must be between 0 and %d", n, most)
	}
}

// Copy returns a deep copy.
func (q *Queue) Copy() *Queue {
	if q == nil {
		return nil
	}
	c := *q
	c.Namespaces = slices.Clone(q.Namespaces)
	c.Quota.GPU = make([]*GPUQuota, len(q.Quota.GPU))
	for i, g := range q.Quota.GPU {
		if g == nil {
			continue
		}
		gc := *g
		if g.BorrowingLimit != nil {
			gc.BorrowingLimit = new(*g.BorrowingLimit)
		}
		if g.LendingLimit != nil {
			gc.LendingLimit = new(*g.LendingLimit)
		}
		c.Quota.GPU[i] = &gc
	}
	if q.Quota.GPU == nil {
		c.Quota.GPU = nil
	}
	return &c
}

// specificity orders the patterns that match a namespace: a literal name
// before any pattern, then the pattern with more literal characters.
func specificity(pattern string) int {
	if !strings.ContainsAny(pattern, `*?[\`) {
		return math.MaxInt
	}
	return len(pattern) - strings.Count(pattern, "*") - strings.Count(pattern, "?")
}

// QueueFor returns the name of the queue of a namespace among queues: the
// one with the most specific pattern that matches it (a literal name
// first), ties going to the queue whose name sorts first; DefaultQueue
// when none matches.
func QueueFor(queues []*Queue, namespace string) string {
	best, bestSpec := DefaultQueue, -1
	for _, q := range queues {
		for _, p := range q.Namespaces {
			if ok, _ := path.Match(p, namespace); !ok {
				continue
			}
			s := specificity(p)
			if s > bestSpec || (s == bestSpec && q.Name < best) {
				best, bestSpec = q.Name, s
			}
		}
	}
	return best
}

// QueueConflict returns an error when q gives a namespace pattern that
// another queue of queues (other than q's own older version) gives too, so
// that a namespace would map to two queues at once; nil otherwise.
func QueueConflict(queues []*Queue, q *Queue) error {
	for _, o := range queues {
		if o.Name == q.Name {
			continue
		}
		for _, p := range q.Namespaces {
			if slices.Contains(o.Namespaces, p) {
				return fmt.Errorf("namespaces: %q is queue %q's already: a namespace maps to one queue", p, o.Name)
			}
		}
	}
	return nil
}

// QueueUsage is what a queue's jobs hold and wait for under the latest
// decision (planner/queue.Usage).
type QueueUsage struct {
	// Resources are the resources of the queue's GPU quotas and those its
	// jobs use or wait for, GPU types by name, then CPU and memory when
	// the queue limits them.
	Resources []QueueResource
	// PendingJobs counts the queue's jobs that are paused or run below
	// their minimum.
	PendingJobs int
	// Jobs are the queue's active jobs, pending ones first, each group in
	// job key order; only GET /v1/queue/<name> lists them, those of the
	// namespaces the caller may list jobs of.
	Jobs []*QueueJob `json:",omitempty"`
}

// QueueResource is a queue's standing in one resource, in GPUs, MHz or MB.
type QueueResource struct {
	// Resource names it: "gpu/" and a GPU type as nodes report it
	// (Node.GPUType), "cpu" or "memory". A GPU quota whose type no node
	// of the cluster has is "gpu/" and the quota's Type.
	Resource string
	// Quota is the Type of the queue's GPU quota that counts the
	// resource; "" for a GPU type no quota of the queue matches, and for
	// CPU and memory.
	Quota string `json:",omitempty"`
	// Nominal is the queue's nominal quota of the resource; a GPU quota
	// that matches several types is split over them as the planner
	// splits it.
	Nominal int
	// Used is what the placements of the queue's jobs hold; Borrowed the
	// part of it beyond Nominal.
	Used, Borrowed int
	// Lent is the part of the queue's idle nominal that queues of its
	// cohort use beyond their own nominals.
	Lent int
	// Pending is what the queue's paused jobs, and those below their
	// minimum, lack to run at their minimum.
	Pending int
}

// IsGPU reports whether r counts GPUs.
func (r *QueueResource) IsGPU() bool { return strings.HasPrefix(r.Resource, "gpu/") }

// QueueJob is one job of a queue, as its latest decision places it.
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
