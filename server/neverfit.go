package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/queue"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
)

// checkFits refuses a job that no node of the committed inventory could
// run even empty (planner.NeverFits): a role's single task needs more
// devices of a kind, CPU or memory than any known node, ready or not, has in total,
// no node has its task driver, or every node fails its constraints. The
// refusal is a 422 whose message says why in Nomad's words ("missing
// devices", "missing drivers", `constraint "..." filtered 2 nodes`);
// `caravan job run` exits 2 on it, and a job declared in the cluster is
// rejected with a JobRejected event (leader.syncDeclared). Nothing is
// committed. A job whose minimum its queue may never hold
// (queue.NeverAdmitted) is refused the same way.
//
// With no node committed (the driver has not listed nodes yet, or cannot
// reach the cluster) a job is accepted and waits: an inventory that is
// empty for now says nothing about what the cluster can run. A failed read of the state accepts the
// job too, with a warning: the check only spares a job a wait for ever.
func (s *Server) checkFits(job *structs.Job) error {
	c, err := s.inventory.cluster(s.State())
	if err != nil {
		s.log.Warn("cannot read the nodes to check that a job can be placed", "job_id", job.ID, "error", err)
		return nil
	}
	defer s.inventory.mu.Unlock()
	if err := c.NeverFits(job); err != nil {
		return &CodedError{Code: http.StatusUnprocessableEntity, Err: fmt.Errorf("job %q: %w", job.ID, err)}
	}
	queues, err := state.Queues(s.State().Txn(), nil)
	if err != nil {
		s.log.Warn("cannot read the queues to check that a job can be admitted", "job_id", job.ID, "error", err)
		return nil
	}
	if err := queue.NeverAdmitted(queues, c, job); err != nil {
		return &CodedError{Code: http.StatusUnprocessableEntity, Err: fmt.Errorf("job %q: %w", job.ID, err)}
	}
	return nil
}

// inventory is the committed nodes as one empty planner.Cluster, which
// checkFits reuses until the nodes change, or for inventoryChecks checks:
// building it (the nodes' classes, hashed and compared) cost each
// registration O(nodes), a third of the CPU of registering jobs on 10,000
// nodes (server/README.md, "Scale"), and rebuilding it now and then
// drops the constraints its feasibility checker cached, which users write.
type inventory struct {
	mu     sync.Mutex
	store  *state.Store
	index  uint64
	checks int
	c      *planner.Cluster
}

// inventoryChecks is how many checks one inventory cluster serves.
const inventoryChecks = 4096

// cluster returns the cluster of store's nodes, locked: the caller
// unlocks inv.mu when done with it, since the cluster's feasibility
// caches are not safe for concurrent use. On an error, or a panic,
// nothing is left locked.
func (inv *inventory) cluster(store *state.Store) (*planner.Cluster, error) {
	// The index is read before the nodes: if they change in between, the
	// cluster is newer than its index and the next call rebuilds it.
	index := store.Index(state.TableNodes)
	inv.mu.Lock()
	locked := false
	defer func() {
		if !locked {
			inv.mu.Unlock()
		}
	}()
	if inv.c == nil || inv.store != store || inv.index != index || inv.checks >= inventoryChecks {
		nodes, err := state.Nodes(store.Txn(), nil)
		if err != nil {
			return nil, err
		}
		inv.store, inv.index, inv.checks, inv.c = store, index, 0, planner.NewCluster(nodes)
	}
	inv.checks++
	locked = true
	return inv.c, nil
}

// gateNodeDrivers returns nodes without their Drivers unless supported:
// servers before 0.2.0 would drop them, and plan and check registrations
// against other nodes than the rest, so drivers are committed, as
// Placement.Finished is, only once every server records 0.2.0 or later.
// Without them a node runs any driver (structs.Node.HasDriver).
func gateNodeDrivers(nodes []*structs.Node, supported bool) []*structs.Node {
	if supported {
		return nodes
	}
	out := make([]*structs.Node, len(nodes))
	for i, n := range nodes {
		if n.Drivers != nil {
			n = n.Copy()
			n.Drivers = nil
		}
		out[i] = n
	}
	return out
}
