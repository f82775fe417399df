// Package queue makes any algorithm's decision respect queues (issue 32):
// teams share one cluster, each queue is promised a nominal quota per
// resource, lends what it does not need to the queues of its cohort,
// borrows theirs, and gets its quota back by shrinking the borrowers.
//
// The concepts are Kueue's: a structs.Queue is a ClusterQueue with a
// nominal quota per resource, a cohort of queues that lend to each other,
// a borrowingLimit (how much beyond its nominal a queue may borrow) and a
// lendingLimit (how much of its idle nominal it lends). Apply is a pass
// after the algorithm, so that every algorithm gets queues the same way:
//
//	algorithm.Plan ─▶ Decision ─▶ queue.Apply ─▶ Decision + []Preemption
//	                                 │
//	        usage, demand ─▶ entitlement ─▶ trim ─▶ fill
//
// # Resources
//
// GPUs are shared per type: the GPUs of a node count as its GPU type
// (structs.Node.GPUType), and against the first of a queue's GPU quotas
// that matches the type (structs.GPUQuota.Matches). A type no quota of a
// queue matches has nominal 0 for it: the queue may use it only as a
// borrower. A quota that matches several types of the cluster ("*") is
// split over them, first up to the queue's demand of each type, then up
// to each type's capacity; its limits are spent type by type, in the
// order of the types' names. CPU (MHz) and memory (MB) are one untyped
// resource each, with the same rules, but only for the queues that set
// them: a queue without a CPU quota is not limited in CPU, and lends none.
// Capacity is what the request's nodes have free plus what held
// placements take (changes in flight, which count toward their queues).
//
// # Queues
//
// A job belongs to structs.QueueFor(queues, namespace); a namespace no
// queue names goes to structs.DefaultQueue, which, unless defined, has
// nominal 0 of everything and no cohort: its jobs run on capacity no
// queue's nominal covers.
//
// # Entitlement
//
// Per queue and resource: demand is what the queue's jobs would take at
// their maximum (workers and parameter servers at their elastic maximum,
// times the GPUs of one task), a job counting toward every GPU type whose
// nodes may run it, plus what held placements take. The queue is
// guaranteed min(demand, nominal). It lends the rest of its nominal, up
// to its lending limit, to its cohort; a queue without a cohort lends
// nothing. The capacity no queue's nominal covers is unclaimed and lent
// to every queue. A queue whose demand is beyond its nominal borrows,
// up to its borrowing limit: first from its cohort's pool, then from the
// unclaimed pool, each pool shared by weighted water-filling over the
// borrowers (structs.Queue.Weight; units left by rounding go to the
// largest fractions, ties by queue name). Queues of different cohorts
// never borrow from each other. A queue's entitlement is its guarantee
// plus what it borrows.
//
// # Trim and fill
//
// A queue that uses more than its entitlement of a resource gives it
// back: its jobs, lowest priority first, then least progress
// (planner.Job.Step), shrink one worker at a time toward their minimum
// workers, taking workers off the nodes of the resource the queue is
// over, parameter servers kept; then, while the queue is still over,
// whole jobs pause in the same order. Every job shrunk or paused gets a
// reason naming the queue and why, and a Preemption.
//
// Then paused jobs run again, highest priority first. One that runs now
// is kept where it runs when its queue is entitled to all its current
// placement takes and it still fits there: a fixed-size algorithm (fifo,
// tetris) keeps a job only at its request, so without this it would
// pause, the round after, a job the queues shrank below it, and leave
// its queue's quota idle. The others start at their minimum, on
// the nodes of one GPU type with the room the decision leaves, placed as
// the algorithms place (planner/placement), when their queue is entitled
// to that much more of every resource it limits and some queue gave the
// resource back or another queue is entitled to borrow it: this is
// reclaim. Apply starts no job on capacity nobody borrows: there the
// algorithm's choice to keep a job waiting stands.
//
// Apply is pure and deterministic: the same request, decision, queues
// and held placements give the same result; it modifies none of them.
package queue
