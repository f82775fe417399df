// Package coord is the node-local subtask coordinator: the trainers of
// different jobs co-located on one machine ask it before each computation
// and each communication phase, and tell it when the phase ends, so that
// their phases interleave instead of contending. It is the worker-side
// subtask executor of Harmony's runtime (the dissertation in
// shared/papers/001, chapter 4, §4.3.1 "Fine-grained Execution with
// Subtasks" and Figure 4.6):
//
//   - A worker's step is decomposed into subtasks that each use one
//     dominant resource: COMP subtasks the CPU, PULL and PUSH (COMM)
//     subtasks the network. "Harmony naturally treats PS push/pull methods
//     as COMM subtasks and the remainder parts of worker task as COMP
//     subtasks" (§4.3.1); examples/trainer does the same.
//   - Subtasks are enqueued "to the CPU or the network queue
//     respectively", and run "in the provided order": here one FIFO queue
//     per resource, across all jobs on the machine.
//   - "A single CPU subtask is executed at a time as a single CPU subtask
//     usually uses almost all of the provided CPU resources": the CPU has
//     one slot.
//   - "We schedule a secondary network subtask that uses the network
//     resources whenever available, while yielding the network resources
//     to the primary network subtask whenever a contention occurs": the
//     network has two slots, see below.
//
// # The scheduling rule
//
// Acquire(resource) queues the request at the tail of that resource's
// FIFO queue; a request is granted when it is at the head and a slot is
// free, and holds the slot until Release or until its lease's TTL passes.
//
//   - CPU: one slot. At most one COMP subtask runs on the machine.
//   - Network: a primary slot and a secondary slot. The head of the
//     queue takes the primary slot when it is free; while the primary is
//     held, the next takes the secondary one. When the primary ends, the
//     secondary becomes the primary (it is never stopped: a transfer in
//     flight cannot be paused from here) and the next waiter may become
//     the secondary. So at most two COMM subtasks run, and a lone one is
//     always the primary. The grant says which role a lease has. The
//     dissertation's secondary also yields the network to the primary
//     under contention, packet by packet; a user-space coordinator cannot
//     do that, so yielding is left to the transport: a holder granted the
//     secondary role may send at a lower priority (e.g. SO_PRIORITY or
//     DSCP on its sockets). examples/trainer does not, and on loopback
//     there is no queue to prioritise. Config.NoSecondary turns the
//     secondary slot off (one COMM subtask at a time).
//
// The two queues are independent: a COMP subtask of one job runs while a
// COMM subtask of another does, which is where co-location gains. A job
// whose own step is COMP then COMM keeps its order; the coordinator never
// reorders one caller's requests since each waits for its grant.
//
// # Robustness
//
// A coordinator is an optimisation, never a dependency: its clients
// (collector/client's Coordinator and the Python client) run the phase
// uncoordinated when it cannot be reached or refuses them, and do nothing
// at all when no coordinator is configured.
//
//   - A holder that dies keeps its slot only until its lease's TTL
//     (default 30 s, at most 10 min, chosen by the caller as a bound on
//     its phase): the lease then expires, is counted, and the next waiter
//     is admitted. A holder that overruns its TTL loses the slot the same
//     way; its late Release is ErrUnknownLease (404), which clients
//     ignore.
//   - A waiter that goes away (its HTTP request ends) leaves the queue at
//     once; a grant that raced with its departure, or whose answer could
//     not be written, is released at once.
//   - Queues are bounded (Config.MaxQueue, 1024 by default): one more
//     request is ErrQueueFull (429). A wait is bounded (at most 1 min):
//     a request not granted in time leaves the queue and is answered
//     "Granted": false; the client asks again.
//   - Input is bounded where it enters: resource "cpu" or "net", a holder
//     name of at most 256 bytes, durations within their limits, a query of
//     at most 1 KiB, no body, unknown parameters refused (400).
//
// # Where it runs
//
// The coordinator is an extra set of endpoints of the collector
// (`caravan collector -coordinator`), on the same listener as the
// metrics API. Co-located jobs must share one coordinator per machine,
// which rules out the collector sidecar the Nomad driver adds to each
// task group: a sidecar lives and dies with one job's allocation, and
// each job has its own. So the coordinator runs as a Nomad system job
// (deploy/nomad/caravan-coordinator.nomad.hcl: one `caravan collector
// -coordinator` per client node) listening on a fixed loopback port with
// host networking, e.g. 127.0.0.1:9190; the agents' nomad.coordinator_addr
// makes the Nomad driver give every task that address as
// CARAVAN_COORDINATOR_ADDR. The same process may also serve as the
// node's collector (collector/README.md, "Sidecar or system job"). A unix
// socket in an allocation directory would not do: other allocations
// cannot see it.
//
// # Wire protocol
//
// HTTP/1.1 with JSON answers, long-polling like the collector's blocking
// reads (see README.md):
//
//	POST /v1/coord/acquire?resource=cpu|net&holder=H&ttl=D&wait=D
//	     → 200 {"Granted": true, "Lease": "…", "Resource": "cpu", "Role": "cpu|primary|secondary", "TTLS": 30, "WaitedS": 0.01}
//	     → 200 {"Granted": false}        (wait passed; ask again)
//	POST /v1/coord/release?lease=ID      → 200 {"Released": true}, 404 when expired or unknown
//	GET  /v1/coord/status                → counters per resource and the leases held
//
// All methods of Coordinator are safe for concurrent use.
package coord
