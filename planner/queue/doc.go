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
//	usage, demand ─▶ entitlement ─▶ trim ─▶ preempt ─▶ fill ─▶ grow
//
// # Resources
//
// GPUs are shared per type: the GPUs of a node count as its GPU type
// (structs.Node.GPUType), and against the first of a queue's GPU quotas
// that matches the type (structs.GPUQuota.Matches). A type no quota of a
// queue matches has nominal 0 for it: the queue may use it only as a
// borrower. A quota that matches several types of the cluster ("*") is
// split over them in proportion to each type's capacity, less what the
// one-type quotas of all queues take of it (largest remainders, ties by
// type name, a unit going first to a type whose nominals, summed over
// the queues, are still below its capacity), so that when the queues'
// nominals sum to at most the cluster's GPUs no type's nominals sum
// beyond its capacity: on 8 A100s and 8 V100s, two queues of "*" 8 each
// get 4 of each type. The split ignores demand. A quota's limits are
// spent type by type, in the order of the types' names. CPU (MHz) and memory (MB) are one untyped
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
// # Trim
//
// A queue that uses more than its entitlement of a resource gives it
// back: its jobs, lowest priority first, then least progress
// (planner.Job.Step), shrink one worker at a time toward their minimum
// workers, taking workers off the nodes of the resource the queue is
// over, parameter servers kept; then, while the queue is still over,
// whole jobs pause in the same order. Every job shrunk or paused gets a
// reason naming the queue and why, and a Preemption.
//
// # Priority within a queue
//
// Then, within each queue, a paused job starts ahead of the queue's
// running jobs of strictly lower priority (structs.Job.Priority), which
// give way as trim makes queues give back, and only where that lets it
// start. The paused jobs whose minimum takes GPUs go highest priority
// first (then first submitted); for each, the GPU types whose nodes may
// run it are tried in the order of their names. On a type, the running
// jobs of its queue of lower priority, lowest priority first, then least
// progress, shrink one worker at a time toward their minimum workers,
// taking workers off that type's nodes, until the job's minimum fits
// both the queue's entitlement of every resource it limits and the room
// on that type's nodes (placed as the algorithms place); if shrinking
// all of them is not enough, they pause in the same order, a job
// counting only if it runs on that type's nodes or its queue lacks the
// CPU or memory it takes; then the jobs shrunk grow back, highest
// first, as far as the job still fits, and it starts at its minimum.
// Where even pausing all of them would not make room, on any type,
// nothing changes: no preemption is useless. A job that fits as things
// stand starts without preempting anyone, when a job of lower priority
// of its queue runs. Jobs of equal priority never preempt each other,
// nor does a queue's job ever preempt another queue's here. Each job
// shrunk or paused gets the reason `queue "nlp": preempted by
// higher-priority job "urgent" (priority 90 > 50)` (after trim's, if
// trim shrank it too) and a Preemption; the started job's reason names
// the jobs it preempted. What they gave back goes to that job: it is no
// reclaim for fill. Passes over the queues repeat until none starts a
// job, so that room one queue's preemption leaves on a type's nodes
// serves another queue's job: they end, since each start puts a job in
// the place of jobs of strictly lower priority in its queue.
//
// # Reclaim
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
// A queue fill started a job in then grows its running jobs, the ones
// fill started and the algorithm's (not those trim shrank), highest
// priority first, one worker at a time up to each job's maximum, while
// the queue is entitled to what one more worker takes of every resource
// it limits and the decision leaves room: first on the nodes of the GPU
// types the job runs on, in the order of their names, then on those of
// the other types its workers may run on, a type only where the queue
// may reclaim it; within a type on the nodes the job is on first, each
// filled before the next. Parameter servers stay as they are. On 4 A100s
// and 4 V100s left by a queue that shrank, a job started at 4 workers on
// the A100s grows onto the V100s to its queue's 8. A grown job's reason
// says its queue grew it within its quota; growth is no preemption.
//
// # Usage
//
// Usage reports, per queue and resource, what a decision gives: the
// nominal (split over types as Apply splits it), what the queue's jobs
// use, what they borrow beyond the nominal, what of its idle nominal the
// queue lends to its cohort's borrowers (a cohort's borrowed total spread
// over its lenders in proportion to what each may lend), and what its
// paused jobs lack to run at their minimum. The server answers it with
// the queues (GET /v1/queue/<name>) and exports it to Prometheus.
//
// Apply is pure and deterministic: the same request, decision, queues
// and held placements give the same result; it modifies none of them.
package queue
