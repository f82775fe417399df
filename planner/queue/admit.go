package queue

import (
	"fmt"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// NeverAdmitted returns why a job can never run in its queue, nil when
// it may: its minimum takes more GPUs than its queue may ever hold of
// every GPU type of the nodes that could run it (issue 32: refused at
// `job run`, not left waiting for ever). A queue may hold of a type the
// nominal of the quota counting it plus that quota's borrowing limit; a
// type no quota of the queue counts, or one whose quota has no borrowing
// limit, bounds nothing, and neither does the default queue when no
// queue of that name is defined. A job runs on one GPU type, so its
// minimum must fit one type's bound. c is the nodes' cluster, free of
// tasks (planner.NewCluster), which the check leaves unchanged.
func NeverAdmitted(queues []*structs.Queue, c *planner.Cluster, job *structs.Job) error {
	name := structs.QueueFor(queues, job.Namespace)
	i := slices.IndexFunc(queues, func(q *structs.Queue) bool { return q.Name == name })
	if i < 0 {
		return nil
	}
	q := queues[i]
	pj := &planner.Job{Job: job}
	t := c.JobTasks(pj)
	psGPUs, workerGPUs := gpus(t)
	ps, workers := pj.Bounds()
	need := workers.Min * workerGPUs
	if pj.HasPS() {
		need += ps.Min * psGPUs
	}
	if need == 0 {
		return nil
	}
	var types, bounds []string
	for _, n := range c.Nodes {
		if typ := nodeGPUType(n); typ != "" && !slices.Contains(types, typ) {
			types = append(types, typ)
		}
	}
	slices.Sort(types)
	for _, typ := range types {
		g := q.Quota.GPUQuotaFor(typ)
		if g == nil || g.BorrowingLimit == nil {
			return nil
		}
		most := g.Nominal + *g.BorrowingLimit
		if need <= most {
			return nil
		}
		bounds = append(bounds, fmt.Sprintf("%d of %s (%d nominal + %d borrowing limit)", most, typ, g.Nominal, *g.BorrowingLimit))
	}
	if len(types) == 0 {
		return nil
	}
	return fmt.Errorf("its minimum takes %d GPUs, more than queue %q may ever hold of any GPU type: at most %s",
		need, q.Name, strings.Join(bounds, "; "))
}
