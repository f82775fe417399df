package server

import (
	"github.com/caravan-sched/caravan/planner/queue"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// queueUsageTables are the tables a queue's usage is read from: a
// blocking read of queues answers when any of them moves.
var queueUsageTables = []string{state.TableQueues, state.TableJobs, state.TableDesired, state.TableDecision, state.TableNodes}

// queueUsages is every queue's usage under the latest decision, with the
// jobs and placements it was computed from.
type queueUsages struct {
	usage      map[string]*queue.QueueUsage
	jobs       map[structs.JobKey]*structs.Job
	placements map[structs.JobKey]*structs.Placement
}

// readQueueUsage computes the usage of queues (all of the state's) from
// the state: its nodes, active jobs and their desired placements, one
// pass over each (planner/queue.Usage).
func readQueueUsage(txn *memdb.Txn, ws memdb.WatchSet, queues []*structs.Queue) (*queueUsages, error) {
	nodes, err := state.Nodes(txn, ws)
	if err != nil {
		return nil, err
	}
	all, err := state.Jobs(txn, ws, "")
	if err != nil {
		return nil, err
	}
	plan, err := state.LatestPlan(txn, ws)
	if err != nil {
		return nil, err
	}
	u := &queueUsages{jobs: make(map[structs.JobKey]*structs.Job, len(all)), placements: map[structs.JobKey]*structs.Placement{}}
	var active []*structs.Job
	for _, j := range all {
		if !structs.Terminal(j.Status) {
			active = append(active, j)
			u.jobs[j.Key()] = j
		}
	}
	var placements []*structs.Placement
	if plan != nil {
		placements = plan.Placements
		for _, p := range placements {
			u.placements[p.Key()] = p
		}
	}
	u.usage = queue.Usage(queues, nodes, active, placements)
	return u, nil
}

// status returns a copy of queue q with its usage, and its jobs when
// withJobs.
func (u *queueUsages) status(q *structs.Queue, withJobs bool) *structs.Queue {
	c := *q
	qu := u.usage[q.Name]
	if qu == nil {
		return &c
	}
	c.Usage = &structs.QueueUsage{Resources: qu.Resources, PendingJobs: qu.PendingJobs}
	if !withJobs {
		return &c
	}
	for i, k := range qu.Jobs {
		qj := &structs.QueueJob{Namespace: k.Namespace, ID: k.ID, Pending: i < qu.PendingJobs}
		if j := u.jobs[k]; j != nil {
			qj.Status = j.Status
		}
		if p := u.placements[k]; p != nil {
			qj.PS, qj.Workers, qj.Reason = p.NumPS, p.NumWorkers, p.Reason
		}
		c.Usage.Jobs = append(c.Usage.Jobs, qj)
	}
	return &c
}
