package nomad

import (
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"strconv"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// The rendezvous of a torchrun job (structs.LauncherTorchrun). Every
// worker task is one torchrun agent (node) with one worker process
// (--nproc_per_node=1), and every generation is one fixed-size torchrun
// group (--nnodes = the placement's workers, --max_restarts=0): a rescale
// restarts every task through the checkpoint protocol, as for any job,
// so the rendezvous only has to live as long as its generation
// (examples/pytorch-ddp/README.md has the measurements behind this).
//
// Caravan's rank 0, the first allocation of the first worker entry of
// the placement, hosts torchrun's c10d store. Its group is split off as
// a group of one, `<group>-rdzv`, that reserves the static port
// rdzvPort (label "rdzv") on its node, so that Nomad's scheduler checks
// that the port is free there; the node's address is its
// unique.network.ip-address attribute, known when the job is translated.
// Every worker task then gets, in its environment:
//
//	CARAVAN_LAUNCHER       torchrun
//	CARAVAN_RDZV_ENDPOINT  <rank 0's node address>:<port>
//	CARAVAN_RDZV_ID        <namespace>.<job ID>.<generation>
//
// and caravan_torch's wrapper (python3 -m caravan_torch torchrun …)
// turns them, with CARAVAN_NUM_WORKERS and CARAVAN_RANK, into torchrun's
// flags (drivers/nomad/README.md).
const (
	// rdzvPortLabel labels the reserved port of rank 0's group.
	rdzvPortLabel = "rdzv"
	// rdzvPortBase and rdzvPortRange bound the static rendezvous ports:
	// above Nomad's default dynamic port range (20000–32000), so that
	// no dynamic port of another allocation takes it.
	rdzvPortBase  = 45000
	rdzvPortRange = 5000
	// rdzvGroupSuffix ends the name of rank 0's group.
	rdzvGroupSuffix = "-rdzv"
)

// nodeAddrAttr is the Nomad node attribute that holds the node's address.
const nodeAddrAttr = "unique.network.ip-address"

// rdzvPort is the static port of the rendezvous of a job's generation:
// deterministic (a hash of the namespace, job ID and generation), and
// different from one generation to the next, so that a new generation
// never waits for the port of the one it replaces.
func rdzvPort(job *structs.Job, generation int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d", job.Namespace, job.ID, generation)
	return rdzvPortBase + int(h.Sum32()%rdzvPortRange)
}

// rendezvous is where a torchrun generation meets.
type rendezvous struct {
	port int
	env  map[string]string
}

// torchrunRendezvous returns the rendezvous of a torchrun job's
// generation as placed, or nil for a job of another launcher or a paused
// placement. It fails when rank 0's node has no known address
// (sub.NodeAddrs).
func torchrunRendezvous(job *structs.Job, p *structs.Placement, sub Submission) (*rendezvous, error) {
	if job.Training == nil || job.Training.Launcher != structs.LauncherTorchrun || p.NumWorkers == 0 {
		return nil, nil
	}
	node := ""
	for _, n := range p.Nodes {
		if n.Workers > 0 {
			node = n.NodeID
			break
		}
	}
	host := sub.NodeAddrs[node]
	if host == "" {
		return nil, fmt.Errorf("torchrun job %q: node %s of its rank 0 has no %s attribute: where would the rendezvous be?", job.ID, node, nodeAddrAttr)
	}
	port := rdzvPort(job, sub.Generation)
	return &rendezvous{port: port, env: map[string]string{
		"CARAVAN_LAUNCHER":      structs.LauncherTorchrun,
		"CARAVAN_RDZV_ENDPOINT": net.JoinHostPort(host, strconv.Itoa(port)),
		"CARAVAN_RDZV_ID":       job.Namespace + "." + job.ID + "." + strconv.Itoa(sub.Generation),
	}}, nil
}

// groupPart is one task group of an entry: count tasks from rank base.
type groupPart struct {
	count, base int
	// rdzv: the group of rank 0 alone, which reserves the rendezvous port.
	rdzv bool
}

// parts splits an entry of count worker tasks from rank base into its
// groups: one, but for a torchrun job's rank 0, which gets a group of its
// own (rdzv) beside the entry's other tasks.
func (r *rendezvous) parts(role string, count, base int) []groupPart {
	if r == nil || role != structs.RoleWorker || base != 0 {
		return []groupPart{{count: count, base: base}}
	}
	out := []groupPart{{count: 1, base: 0, rdzv: true}}
	if count > 1 {
		out = append(out, groupPart{count: count - 1, base: 1})
	}
	return out
}

// reserve adds the rendezvous port to rank 0's group.
func (r *rendezvous) reserve(tg *api.TaskGroup) {
	port := api.Port{Label: rdzvPortLabel, Value: r.port}
	if len(tg.Networks) > 0 { // Nomad allows one network per group
		tg.Networks[0].ReservedPorts = append(tg.Networks[0].ReservedPorts, port)
		return
	}
	tg.Networks = []*api.NetworkResource{{ReservedPorts: []api.Port{port}}}
}

// partName names a part's group: the entry's group name, with
// rdzvGroupSuffix for rank 0's group of a torchrun job.
func partName(name string, pt groupPart) string {
	if pt.rdzv {
		return name + rdzvGroupSuffix
	}
	return name
}

// roleEnv is the environment of role's tasks besides contractEnv's: the
// role and, for a torchrun job's workers, the rendezvous. A nil
// rendezvous adds the role alone.
func (r *rendezvous) roleEnv(role string) map[string]string {
	env := map[string]string{"CARAVAN_ROLE": role}
	if r != nil && role == structs.RoleWorker {
		maps.Copy(env, r.env)
	}
	return env
}
