package queue

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// randomQueues returns 1 to 4 queues "q0"… of namespaces "ns-0"…, in
// cohorts "", "c1" or "c2", each with a quota of each of the random
// request's GPU models (planner.RandomRequest: "A100", "V100") or none,
// limits on some, and a CPU quota on some.
func randomQueues(t *testing.T, rng *rand.Rand) []*structs.Queue {
	var out []*structs.Queue
	for i := range 1 + rng.IntN(4) {
		q := &structs.Queue{
			Name: fmt.Sprint("q", i), Namespaces: []string{fmt.Sprint("ns-", i)},
			Cohort: []string{"", "c1", "c2", "c1"}[rng.IntN(4)], Weight: float64(1 + rng.IntN(3)),
		}
		for _, typ := range []string{"A100", "V100"} {
			if rng.IntN(4) == 0 {
				continue
			}
			g := &structs.GPUQuota{Type: typ, Nominal: rng.IntN(24)}
			if rng.IntN(3) == 0 {
				g.BorrowingLimit = intp(rng.IntN(8))
			}
			if rng.IntN(3) == 0 {
				g.LendingLimit = intp(rng.IntN(g.Nominal + 1))
			}
			q.Quota.GPU = append(q.Quota.GPU, g)
		}
		if rng.IntN(4) == 0 {
			q.Quota.CPU = 2000 * (1 + rng.IntN(20))
		}
		if rng.IntN(5) == 0 {
			q.Quota.MemoryMB = 4096 * (1 + rng.IntN(20))
		}
		must.NoError(t, q.Validate())
		out = append(out, q)
	}
	return out
}

// usage adds to out what placements of jobs on nodes take of each
// resource per queue: GPUs by node GPU type, "cpu" MHz and "memory" MB.
func usage(out map[string]map[string]int, nodes []*structs.Node, jobs []*planner.Job, placements []*structs.Placement, queues []*structs.Queue) {
	c := planner.NewCluster(nodes)
	views := map[structs.JobKey]*planner.Job{}
	for _, j := range jobs {
		views[j.Job.Key()] = j
	}
	for _, p := range placements {
		v := views[p.Key()]
		q := structs.QueueFor(queues, v.Job.Namespace)
		if out[q] == nil {
			out[q] = map[string]int{}
		}
		t := c.JobTasks(v)
		gps, gw := gpus(t)
		for _, nt := range p.Nodes {
			i, _ := c.NodeIndex(nt.NodeID)
			if typ := nodeGPUType(nodes[i]); typ != "" {
				out[q][typ] += nt.PS*gps + nt.Workers*gw
			}
			ps, w := t.For(nt)
			out[q][dimCPU] += nt.Workers * w.CPU
			out[q][dimMemory] += nt.Workers * w.MemoryMB
			if nt.PS > 0 {
				out[q][dimCPU] += nt.PS * ps.CPU
				out[q][dimMemory] += nt.PS * ps.MemoryMB
			}
		}
	}
}

// nominalOf is queue name's nominal GPUs of a type, 0 without a queue or
// quota; its borrowing and lending limits, -1 for none.
func nominalOf(queues []*structs.Queue, name, typ string) (nominal, borrow, lend int) {
	i := slices.IndexFunc(queues, func(q *structs.Queue) bool { return q.Name == name })
	if i < 0 {
		return 0, -1, 0
	}
	g := queues[i].Quota.GPUQuotaFor(typ)
	if g == nil {
		return 0, -1, 0
	}
	borrow, lend = -1, g.Nominal
	if g.BorrowingLimit != nil {
		borrow = *g.BorrowingLimit
	}
	if g.LendingLimit != nil {
		lend = *g.LendingLimit
	}
	if queues[i].Cohort == "" {
		lend = 0
	}
	return g.Nominal, borrow, lend
}

func cohortOf(queues []*structs.Queue, name string) string {
	if i := slices.IndexFunc(queues, func(q *structs.Queue) bool { return q.Name == name }); i >= 0 {
		return queues[i].Cohort
	}
	return ""
}

// leftoverOf returns a cluster of nodes with placements taken.
func leftoverOf(t *testing.T, nodes []*structs.Node, jobs []*planner.Job, placements []*structs.Placement) *planner.Cluster {
	c := planner.NewCluster(nodes)
	views := map[structs.JobKey]*planner.Job{}
	for _, j := range jobs {
		views[j.Job.Key()] = j
	}
	for _, p := range placements {
		tasks := c.JobTasks(views[p.Key()])
		for _, nt := range p.Nodes {
			i, ok := c.NodeIndex(nt.NodeID)
			if !ok {
				continue
			}
			ps, w := tasks.For(nt)
			must.True(t, c.FitsPair(i, ps, nt.PS, w, nt.Workers))
			if nt.PS > 0 {
				c.Take(i, ps, nt.PS)
			}
			c.Take(i, w, nt.Workers)
		}
	}
	return c
}

// TestApply_Properties checks Apply after several built-in algorithms on
// random clusters, queues and jobs: its decision keeps CheckDecision's
// rules and is deterministic whatever the order of the request's jobs;
// no queue uses more of a GPU type than its nominal plus its borrowing
// limit; what queues use beyond their nominal is no more than their
// cohort lends plus what no nominal claims; every job shrunk or paused
// has a Preemption, and only those, whose reason is trim's or names a
// running job of its queue of strictly higher priority; a job Apply
// started runs its minimum parameter servers and at least its minimum
// workers, one it grew more workers than the algorithm gave, each saying
// so; no paused job of a queue within its nominal stays paused while its
// minimum fits on a GPU type's nodes another queue borrows (the
// guarantee); and no paused job stays paused while pausing its queue's
// running jobs of strictly lower priority would let its minimum start on
// one GPU type's nodes within its queue's nominal (priority within a
// queue).
func TestApply_Properties(t *testing.T) {
	for _, name := range []string{"fifo", "drf", "optimus", "tiresias", "tetris", "roundrobin"} {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(32, 11))
			trimmed, filled, grown, borrowing, checked := 0, 0, 0, 0, 0
			preemptedBy, startedAhead, ahead := 0, 0, 0
			for trial := range 200 {
				req := planner.RandomRequest(rng)
				for _, j := range req.Jobs {
					j.Job.Namespace = []string{"ns-0", "ns-1", "ns-2", "ns-3", "other"}[rng.IntN(5)]
					if j.Current != nil {
						j.Current.Namespace = j.Job.Namespace
					}
				}
				// Every other trial, some running jobs' changes are in
				// flight: they hold their placements outside the request.
				var held []planner.Held
				var heldJobs []*planner.Job
				var heldPlacements []*structs.Placement
				if trial%2 == 1 {
					var free []*planner.Job
					for _, j := range req.Jobs {
						if j.Current != nil && rng.IntN(2) == 0 {
							held = append(held, planner.Held{Job: j, Placement: j.Current})
							heldJobs, heldPlacements = append(heldJobs, j), append(heldPlacements, j.Current)
							continue
						}
						free = append(free, j)
					}
					if len(free) == 0 {
						free, held, heldJobs, heldPlacements = req.Jobs, nil, nil, nil
					}
					req.Jobs = free
					req.Nodes = planner.Reserve(req.Nodes, held)
				}
				queues := randomQueues(t, rng)
				dec, err := builtin.Algorithms[name]().Plan(req)
				must.NoError(t, err)
				planner.SortPlacements(dec.Placements)
				must.NoError(t, planner.CheckDecision(req, dec))

				out, pre := Apply(req, dec, queues, held)
				msg := must.Sprintf("trial %d", trial)
				must.NoError(t, planner.CheckDecision(req, out), msg)

				shuffled := *req
				shuffled.Jobs = slices.Clone(req.Jobs)
				rng.Shuffle(len(shuffled.Jobs), func(a, b int) { shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a] })
				again, pre2 := Apply(&shuffled, dec, queues, held)
				must.Eq(t, out, again, msg)
				must.Eq(t, pre, pre2, msg)

				// Preemptions: exactly the jobs that got less.
				preempted := map[structs.JobKey]Preemption{}
				for _, p := range pre {
					preempted[p.Job] = p
				}
				for i, p := range out.Placements {
					from := dec.Placements[i]
					must.Eq(t, from.Key(), p.Key())
					pr, ok := preempted[p.Key()]
					switch {
					case p.Shape().Compare(from.Shape()) < 0:
						must.True(t, ok, msg)
						must.Eq(t, from.Shape(), pr.From, msg)
						must.Eq(t, p.Shape(), pr.To, msg)
						if !strings.Contains(pr.Reason, fmt.Sprintf("queue %q: over its quota", pr.Queue)) {
							checkPreemptedBy(t, req, out, queues, pr, msg)
							preemptedBy++
						}
						trimmed++
					case p != from && strings.Contains(p.Reason, "within its quota") && strings.Contains(p.Reason, ": kept at "):
						must.False(t, ok, msg)
						cur := findView(req, p.Key()).Current
						must.NotNil(t, cur, msg)
						if strings.Contains(p.Reason, "; grown to ") {
							// Kept, then grown by workers.
							must.Eq(t, cur.NumPS, p.NumPS, msg)
							must.Greater(t, cur.NumWorkers, p.NumWorkers, msg)
							grown++
						} else {
							must.Eq(t, cur.Shape(), p.Shape(), msg)
							must.Eq(t, cur.Nodes, p.Nodes, msg)
						}
					case p != from && strings.Contains(p.Reason, "started at its minimum"):
						// Paused by the algorithm or trim, started at
						// its minimum, and maybe grown.
						must.False(t, ok, msg)
						if strings.Contains(p.Reason, "preempting its lower-priority jobs") {
							startedAhead++
						}
						m := findView(req, p.Key()).Minimum()
						must.Eq(t, m.PS, p.NumPS, msg)
						must.GreaterEq(t, m.Workers, p.NumWorkers, msg)
						if p.NumWorkers > m.Workers {
							must.StrContains(t, p.Reason, "; grown to "+p.Shape().String()+" within its quota", msg)
							grown++
						}
						filled++
					case p != from:
						// Grown beyond what the algorithm gave.
						must.False(t, ok, msg)
						must.Eq(t, from.NumPS, p.NumPS, msg)
						must.Greater(t, from.NumWorkers, p.NumWorkers, msg)
						must.StrContains(t, p.Reason, "grown to "+p.Shape().String()+" within its quota", msg)
						grown++
					default:
						must.False(t, ok, msg)
					}
				}

				// Quotas, per GPU type.
				capacity := map[string]int{}
				for _, n := range req.Nodes {
					if typ := nodeGPUType(n); typ != "" {
						for _, d := range n.Devices {
							if d.Type == "gpu" {
								capacity[typ] += d.HealthyCount()
							}
						}
					}
				}
				heldUse := map[string]map[string]int{}
				usage(heldUse, req.Nodes, heldJobs, heldPlacements, queues)
				for _, use := range heldUse {
					for typ, n := range use {
						if typ != dimCPU && typ != dimMemory {
							capacity[typ] += n
						}
					}
				}
				used := map[string]map[string]int{}
				usage(used, req.Nodes, heldJobs, heldPlacements, queues)
				usage(used, req.Nodes, req.Jobs, out.Placements, queues)
				names := []string{structs.DefaultQueue}
				for _, q := range queues {
					names = append(names, q.Name)
				}
				for typ, cap := range capacity {
					claimed := 0
					lendable := map[string]int{}
					for _, q := range names {
						n, _, lend := nominalOf(queues, q, typ)
						claimed += n
						lendable[cohortOf(queues, q)] += lend
					}
					unclaimed := max(cap-claimed, 0)
					overBy := map[string]int{}
					total, heldOver := 0, false
					for _, q := range names {
						n, borrow, _ := nominalOf(queues, q, typ)
						u := used[q][typ]
						if h := heldUse[q][typ]; h > n {
							// Held before the queues were: Apply cannot
							// take it back, and runs nothing more there.
							heldOver = true
							if borrow >= 0 && h > n+borrow {
								must.Eq(t, h, u, must.Sprintf("trial %d: queue %s holds %d %s GPUs beyond its limits, and got more", trial, q, h, typ))
								continue
							}
						}
						if borrow >= 0 {
							must.LessEq(t, n+borrow, u, must.Sprintf("trial %d: queue %s uses %d %s GPUs, beyond %d nominal + %d borrowing limit", trial, q, u, typ, n, borrow))
						}
						if u > n {
							overBy[cohortOf(queues, q)] += u - n
							total += u - n
							borrowing++
						}
					}
					if heldOver {
						continue
					}
					for c, over := range overBy {
						lent := 0
						if c != "" {
							lent = lendable[c]
						}
						must.LessEq(t, lent+unclaimed, over, must.Sprintf("trial %d: cohort %q borrows %d %s GPUs; its queues lend %d and %d are unclaimed", trial, c, over, typ, lent, unclaimed))
					}
					lentAll := 0
					for c, l := range lendable {
						if c != "" {
							lentAll += l
						}
					}
					must.LessEq(t, lentAll+unclaimed, total, msg)
				}

				// The guarantee.
				byType := map[string][]*structs.Node{}
				for _, n := range req.Nodes {
					byType[nodeGPUType(n)] = append(byType[nodeGPUType(n)], n)
				}
				for _, p := range out.Placements {
					if !p.Paused() {
						continue
					}
					v := findView(req, p.Key())
					q := structs.QueueFor(queues, v.Job.Namespace)
					m := v.Minimum()
					c := planner.NewCluster(req.Nodes)
					tasks := c.JobTasks(v)
					gps, gw := gpus(tasks)
					need := m.PS*gps + m.Workers*gw
					if need == 0 {
						continue
					}
					if i := slices.IndexFunc(queues, func(o *structs.Queue) bool { return o.Name == q }); i >= 0 {
						cpu, mem := m.Workers*tasks.Worker.CPU, m.Workers*tasks.Worker.MemoryMB
						if m.PS > 0 {
							cpu, mem = cpu+m.PS*tasks.PS.CPU, mem+m.PS*tasks.PS.MemoryMB
						}
						if quota := queues[i].Quota; quota.CPU > 0 && used[q][dimCPU]+cpu > quota.CPU || quota.MemoryMB > 0 && used[q][dimMemory]+mem > quota.MemoryMB {
							continue
						}
					}
					for typ := range capacity {
						n, _, _ := nominalOf(queues, q, typ)
						if used[q][typ]+need > n {
							continue
						}
						borrowed := false
						for _, o := range names {
							on, _, _ := nominalOf(queues, o, typ)
							borrowed = borrowed || o != q && used[o][typ] > on
						}
						if !borrowed {
							continue
						}
						checked++
						left := leftoverOf(t, byType[typ], req.Jobs, onNodes(out.Placements, byType[typ]))
						lt := left.JobTasks(v)
						_, fits := placement.New(left).Place(lt.PS, m.PS, lt.Worker, m.Workers)
						must.False(t, fits, must.Sprintf("trial %d: job %s of queue %s is paused (%s) within its nominal of %d %s GPUs while another queue borrows them, and its minimum fits", trial, v.Job.ID, q, p.Reason, n, typ))
					}
				}

				// Priority within a queue.
				ahead += checkPriorityOrder(t, trial, req, out, queues, used, byType)
			}
			t.Logf("%s: %d jobs trimmed, %d started, %d grown, %d queue-types borrowing, %d guarantees checked; "+
				"%d preempted by a higher-priority job, %d started preempting, %d priority orders checked",
				name, trimmed, filled, grown, borrowing, checked, preemptedBy, startedAhead, ahead)
			must.Positive(t, preemptedBy, must.Sprint("the instances should make jobs preempt lower-priority ones of their queue"))
			must.Positive(t, ahead, must.Sprint("the instances should test the priority order within queues"))
			must.Positive(t, trimmed, must.Sprint("the instances should make queues give back"))
			must.Positive(t, checked, must.Sprint("the instances should test the guarantee"))
			must.Positive(t, grown, must.Sprint("the instances should make queues grow jobs"))
		})
	}
}

func findView(req *planner.Request, k structs.JobKey) *planner.Job {
	for _, j := range req.Jobs {
		if j.Job.Key() == k {
			return j
		}
	}
	return nil
}

// onNodes returns placements with only their entries on nodes.
func onNodes(placements []*structs.Placement, nodes []*structs.Node) []*structs.Placement {
	var out []*structs.Placement
	for _, p := range placements {
		cp := *p
		cp.Nodes = nil
		for _, nt := range p.Nodes {
			if slices.ContainsFunc(nodes, func(n *structs.Node) bool { return n.ID == nt.NodeID }) {
				cp.Nodes = append(cp.Nodes, nt)
			}
		}
		out = append(out, &cp)
	}
	return out
}

// preemptedByRe parses the reason of a job preempted within its queue.
var preemptedByRe = regexp.MustCompile(`queue "[^"]*": preempted by higher-priority job "([^"]*)" \(priority (\d+) > (\d+)\)`)

// checkPreemptedBy checks a Preemption within a queue: its reason names a
// job of the preempted job's queue (of any of its namespaces), of strictly higher priority, that
// runs.
func checkPreemptedBy(t *testing.T, req *planner.Request, out *planner.Decision, queues []*structs.Queue, pr Preemption, msg must.Setting) {
	t.Helper()
	m := preemptedByRe.FindStringSubmatch(pr.Reason)
	must.SliceLen(t, 4, m, must.Sprintf("%s: %q", pr.Job, pr.Reason), msg)
	victim := findView(req, pr.Job)
	k := slices.IndexFunc(req.Jobs, func(j *planner.Job) bool {
		return j.Job.ID == m[1] && structs.QueueFor(queues, j.Job.Namespace) == pr.Queue
	})
	must.NonNegative(t, k, must.Sprintf("%s preempted for %s, no job of queue %s", pr.Job, m[1], pr.Queue), msg)
	by := req.Jobs[k]
	must.Eq(t, fmt.Sprint(by.Job.Priority), m[2], msg)
	must.Eq(t, fmt.Sprint(victim.Job.Priority), m[3], msg)
	must.Greater(t, victim.Job.Priority, by.Job.Priority, msg)
	i := slices.IndexFunc(out.Placements, func(p *structs.Placement) bool { return p.Key() == by.Job.Key() })
	must.False(t, out.Placements[i].Paused(), must.Sprintf("%s preempted for %s, which does not run", pr.Job, by.Job.ID), msg)
}

// checkPriorityOrder checks that no job whose minimum takes GPUs stays
// paused when it could start at it on one GPU type's nodes by pausing
// only running jobs of its queue of strictly lower priority, with its
// queue within its nominal of the type (so within its entitlement). Queues
// that limit CPU or memory are left out. It returns how many jobs and
// types it checked.
func checkPriorityOrder(t *testing.T, trial int, req *planner.Request, out *planner.Decision, queues []*structs.Queue, used map[string]map[string]int, byType map[string][]*structs.Node) int {
	t.Helper()
	checked := 0
	c := planner.NewCluster(req.Nodes)
	for _, p := range out.Placements {
		if !p.Paused() {
			continue
		}
		v := findView(req, p.Key())
		q := structs.QueueFor(queues, v.Job.Namespace)
		if i := slices.IndexFunc(queues, func(o *structs.Queue) bool { return o.Name == q }); i >= 0 && (queues[i].Quota.CPU > 0 || queues[i].Quota.MemoryMB > 0) {
			continue
		}
		m := v.Minimum()
		gps, gw := gpus(c.JobTasks(v))
		need := m.PS*gps + m.Workers*gw
		if need == 0 {
			continue
		}
		// The others: all but the running jobs of q of lower priority.
		var lower []*planner.Job
		var lowerPlacements, others []*structs.Placement
		for _, o := range out.Placements {
			ov := findView(req, o.Key())
			if !o.Paused() && structs.QueueFor(queues, ov.Job.Namespace) == q && ov.Job.Priority < v.Job.Priority {
				lower, lowerPlacements = append(lower, ov), append(lowerPlacements, o)
				continue
			}
			others = append(others, o)
		}
		if len(lower) == 0 {
			continue
		}
		freed := map[string]map[string]int{}
		usage(freed, req.Nodes, lower, lowerPlacements, queues)
		for typ, nodes := range byType {
			if typ == "" {
				continue
			}
			n, _, _ := nominalOf(queues, q, typ)
			if used[q][typ]-freed[q][typ]+need > n {
				continue
			}
			checked++
			left := leftoverOf(t, nodes, req.Jobs, onNodes(others, nodes))
			lt := left.JobTasks(v)
			_, fits := placement.New(left).Place(lt.PS, m.PS, lt.Worker, m.Workers)
			must.False(t, fits, must.Sprintf("trial %d: job %s (priority %d) of queue %s stays paused (%s), while pausing its queue's %d running jobs of lower priority would let its minimum start on %s GPUs within its nominal of %d",
				trial, v.Job.ID, v.Job.Priority, q, p.Reason, len(lower), typ, n))
		}
	}
	return checked
}
