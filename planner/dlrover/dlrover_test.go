package dlrover

import (
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// mhz is one core of the test nodes, an E5-2682 at 2.5 GHz (D:232).
const mhz = 2500

const now = int64(1_700_000_000_000_000_000)

// setup returns a harness with eight 64-core nodes of 192 GiB, and a PS
// job like the paper's (cpu 1..32 cores for both roles, workers 1..64,
// servers 1..16, memory 1..16 GiB at 4 GiB), not running.
func setup(t *testing.T) (*planner.Harness, *planner.Job) {
	h := planner.NewHarness(t)
	for _, n := range h.AddNodes("node", 8, 64*mhz, 192*1024, 0) {
		n.Attributes["cpu.frequency"] = fmt.Sprint(mhz)
	}
	j := planner.MockJob("wd", structs.Bounds{Min: 1, Max: 16}, structs.Bounds{Min: 1, Max: 64})
	ranged := func() *structs.Resources {
		return &structs.Resources{CPU: 32 * mhz, MemoryMB: 4096,
			CPURange:    &structs.ResourceRange{Min: mhz, Max: 32 * mhz, Initial: 32 * mhz},
			MemoryRange: &structs.ResourceRange{Min: 1024, Max: 16384, Initial: 4096}}
	}
	j.Worker.Resources = ranged()
	j.ParameterServer = j.Worker.Copy()
	j.ParameterServer.Resources = ranged()
	return h, h.AddJob(j, nil)
}

// plan runs DLRover on the harness at now, checks the decision and
// returns the job's placement.
func plan(t *testing.T, h *planner.Harness, alg planner.Algorithm) *structs.Placement {
	t.Helper()
	req := h.Request()
	req.Now = now
	dec, err := alg.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	must.Len(t, 1, dec.Placements)
	again, err := alg.Plan(req)
	must.NoError(t, err)
	must.Eq(t, dec, again, must.Sprint("not deterministic"))
	return dec.Placements[0]
}

// sizes sums a placement's tasks by role and size.
func sizes(p *structs.Placement) map[string]int {
	out := map[string]int{}
	for _, nt := range p.Nodes {
		if nt.PS > 0 {
			out[fmt.Sprintf("ps %d/%d", nt.PSSize.CPU, nt.PSSize.MemoryMB)] += nt.PS
		}
		if nt.Workers > 0 {
			out[fmt.Sprintf("worker %d/%d", nt.WorkerSize.CPU, nt.WorkerSize.MemoryMB)] += nt.Workers
		}
	}
	return out
}

// running sets the job's current placement to ps servers and workers
// workers with their sizes, the servers on node-0 and node-1 and the
// workers spread over node-2.., changed at since, with usage from use
// (role, rank → task usage).
func running(j *planner.Job, ps int, psSize structs.TaskSize, workers int, wSize structs.TaskSize, since time.Duration) {
	p := &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: workers}
	byNode := map[string]*structs.NodeTasks{}
	get := func(node string) *structs.NodeTasks {
		if byNode[node] == nil {
			byNode[node] = &structs.NodeTasks{NodeID: node}
			p.Nodes = append(p.Nodes, byNode[node])
		}
		return byNode[node]
	}
	u := &structs.JobUsage{Namespace: j.Job.Namespace, JobID: j.Job.ID, Time: now}
	psCPU, psMem := j.PSRole().Resources.Sized(psSize)
	wCPU, wMem := j.Job.Worker.Resources.Sized(wSize)
	for r := range ps {
		nt := get(fmt.Sprintf("node-%d", r%2))
		nt.PS++
		nt.PSSize = psSize
		u.Tasks = append(u.Tasks, &structs.TaskUsage{Role: structs.RolePS, Rank: r, NodeID: nt.NodeID, CPULimitMHz: psCPU, MemoryLimitMB: psMem, Source: structs.UsageSourceSim})
	}
	for r := range workers {
		nt := get(fmt.Sprintf("node-%d", 2+r%6))
		nt.Workers++
		nt.WorkerSize = wSize
		u.Tasks = append(u.Tasks, &structs.TaskUsage{Role: structs.RoleWorker, Rank: r, NodeID: nt.NodeID, CPULimitMHz: wCPU, MemoryLimitMB: wMem, MemoryMB: 2000, MaxMemoryMB: 3000, Source: structs.UsageSourceSim})
	}
	structs.SortNodeTasks(p.Nodes)
	j.Current, j.Usage, j.Since = p, u, now-int64(since)
}

// task returns the usage of a task.
func task(j *planner.Job, role string, rank int) *structs.TaskUsage {
	for _, u := range j.Usage.Tasks {
		if u.Role == role && u.Rank == rank {
			return u
		}
	}
	panic("no such task")
}

// sampled records the sampling stage's measurement, in cores.
func sampled(j *planner.Job, what, shat float64) {
	j.Usage.ByShape = append(j.Usage.ByShape, structs.ShapeUsage{Shape: structs.Shape{PS: 1, Workers: 1},
		WorkerCPUMHz: what * mhz, PSCPUMHz: shat * mhz, Measurements: 3})
}

func TestPlan_Sample(t *testing.T) {
	h, _ := setup(t)
	p := plan(t, h, New())
	must.Eq(t, 1, p.NumPS)
	must.Eq(t, 1, p.NumWorkers)
	// The roles' initial sizes: the cpu range's maximum, C_max.
	must.Eq(t, map[string]int{"ps 0/0": 1, "worker 0/0": 1}, sizes(p))
	must.StrContains(t, p.Reason, "dlrover sample")
}

// TestPlan_Table1 runs the optimize stage from Table 1's sampling rows
// and gets its optimize rows: W&D 24 workers of 3 cores and 8 servers of
// 16; xDeepFM 8 workers of 20 cores and 2 servers.
func TestPlan_Table1(t *testing.T) {
	cases := []struct {
		name        string
		what, shat  float64
		ps, workers int
		workerCores int
	}{
		{"wide&deep", 2.5, 5.7, 8, 24, 3},
		{"xdeepfm", 19.4, 3.1, 2, 8, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, j := setup(t)
			running(j, 1, structs.TaskSize{}, 1, structs.TaskSize{}, 2*time.Minute)
			sampled(j, c.what, c.shat)
			p := plan(t, h, New())
			must.Eq(t, c.ps, p.NumPS)
			must.Eq(t, c.workers, p.NumWorkers)
			// Workers: ⌈ŵ⌉ cores and the most memory a worker used (3000
			// MB) with 20% more; servers: 16 cores at the role's memory.
			must.Eq(t, map[string]int{
				fmt.Sprintf("ps %d/0", 16*mhz):                   c.ps,
				fmt.Sprintf("worker %d/3600", c.workerCores*mhz): c.workers,
			}, sizes(p))
			must.StrContains(t, p.Reason, "eq. 10")
			must.Len(t, 2, p.Actions)
			must.Eq(t, structs.ActionResized, p.Actions[0].Kind)
		})
	}
}

// TestPlan_MinInterval: a job changed less than 60 s ago is left alone,
// then adjusted once the minute is over.
func TestPlan_MinInterval(t *testing.T) {
	h, j := setup(t)
	running(j, 1, structs.TaskSize{}, 1, structs.TaskSize{}, 30*time.Second)
	sampled(j, 2.5, 5.7)
	p := plan(t, h, New())
	must.True(t, p.SameTasks(j.Current))
	must.StrContains(t, p.Reason, "waits 1m0s between adjustments")

	j.Since = now - int64(59*time.Second)
	must.True(t, plan(t, h, New()).SameTasks(j.Current))
	j.Since = now - int64(60*time.Second)
	must.Eq(t, 24, plan(t, h, New()).NumWorkers)

	// The option changes it.
	alg := New()
	must.NoError(t, alg.(planner.Configurable).SetConfig(map[string]string{"min_interval": "2m"}))
	must.True(t, plan(t, h, alg).SameTasks(j.Current))
}

// TestPlan_WorkerOOM: a worker killed for memory restarts with double
// memory at once, even within the minute, on its node; the others keep
// theirs.
func TestPlan_WorkerOOM(t *testing.T) {
	h, j := setup(t)
	wSize := structs.TaskSize{CPU: 3 * mhz}
	running(j, 8, structs.TaskSize{CPU: 16 * mhz}, 24, wSize, 10*time.Second)
	killed := task(j, structs.RoleWorker, 5)
	killed.OOMKills, killed.LastOOM = 1, now-int64(time.Second)
	p := plan(t, h, New())
	must.Eq(t, 24, p.NumWorkers)
	must.Eq(t, 8, p.NumPS)
	must.Eq(t, map[string]int{fmt.Sprintf("ps %d/0", 16*mhz): 8, fmt.Sprintf("worker %d/0", 3*mhz): 23, fmt.Sprintf("worker %d/8192", 3*mhz): 1}, sizes(p))
	for _, nt := range p.Nodes {
		if nt.WorkerSize.MemoryMB == 8192 {
			must.Eq(t, killed.NodeID, nt.NodeID)
		}
	}
	must.Len(t, 1, p.Actions)
	a := p.Actions[0]
	must.Eq(t, structs.ActionOOMResized, a.Kind)
	must.Eq(t, 5, a.Rank)
	must.Eq(t, "4096→8192", a.Details["MemoryMB"])

	// A kill from before the current run is stale.
	killed.LastOOM = j.Since - 1
	must.True(t, plan(t, h, New()).SameTasks(j.Current))

	// At the range's maximum, the job is left and the reason says why.
	killed.LastOOM = now
	j.Job.Worker.Resources.MemoryRange.Max = 4096
	p = plan(t, h, New())
	must.True(t, p.SameTasks(j.Current))
	must.StrContains(t, p.Reason, "OOM-killed at its memory maximum of 4096 MB")
}

// TestPlan_PSOOM: servers killed for memory twice (ps_oom_threshold)
// double their count; once is not enough by default, and is with
// ps_oom_threshold = 1 (the paper's rule).
func TestPlan_PSOOM(t *testing.T) {
	h, j := setup(t)
	running(j, 2, structs.TaskSize{CPU: 16 * mhz}, 8, structs.TaskSize{CPU: 20 * mhz}, 10*time.Second)
	task(j, structs.RolePS, 1).OOMKills = 1
	must.True(t, plan(t, h, New()).SameTasks(j.Current))

	alg := New()
	must.NoError(t, alg.(planner.Configurable).SetConfig(map[string]string{"ps_oom_threshold": "1"}))
	must.Eq(t, 4, plan(t, h, alg).NumPS)

	task(j, structs.RolePS, 0).OOMKills = 1
	p := plan(t, h, New())
	must.Eq(t, 4, p.NumPS)
	must.Eq(t, 8, p.NumWorkers)
	must.Eq(t, map[string]int{fmt.Sprintf("ps %d/0", 16*mhz): 4, fmt.Sprintf("worker %d/0", 20*mhz): 8}, sizes(p))
	must.Len(t, 1, p.Actions)
	must.Eq(t, structs.ActionOOMResized, p.Actions[0].Kind)
	must.Eq(t, "2→4", p.Actions[0].Details["PS"])
}

// TestPlan_HotPS: Wide & Deep at its optimize shape with two hot servers
// (the paper's PS-2 and PS-3) at 14.9 and 14.8 of their 16 cores while
// the eight use 85.1: the hotter is replaced by a server of 24 cores
// (D:166), the other in a later round.
func TestPlan_HotPS(t *testing.T) {
	h, j := setup(t)
	running(j, 8, structs.TaskSize{CPU: 16 * mhz}, 24, structs.TaskSize{CPU: 3 * mhz}, 2*time.Minute)
	sampled(j, 2.5, 5.7)
	for r := range 8 {
		task(j, structs.RolePS, r).CPUMHz = (85.1 - 14.9 - 14.8) / 6 * mhz
	}
	task(j, structs.RolePS, 2).CPUMHz = 14.9 * mhz
	task(j, structs.RolePS, 3).CPUMHz = 14.8 * mhz
	p := plan(t, h, New())
	must.Eq(t, 8, p.NumPS)
	must.Eq(t, map[string]int{fmt.Sprintf("ps %d/0", 16*mhz): 7, fmt.Sprintf("ps %d/0", 24*mhz): 1, fmt.Sprintf("worker %d/0", 3*mhz): 24}, sizes(p))
	must.Len(t, 1, p.Actions)
	must.Eq(t, structs.ActionHotPSReplaced, p.Actions[0].Kind)
	must.Eq(t, 2, p.Actions[0].Rank)
	must.Eq(t, fmt.Sprintf("%d→%d", 16*mhz, 24*mhz), p.Actions[0].Details["CPU"])
	must.StrContains(t, p.Reason, "D:166")
}

// TestPlan_BusyPS: servers above 90% that are not hot get double CPU, up
// to C_max; at C_max the job gets one more server.
func TestPlan_BusyPS(t *testing.T) {
	h, j := setup(t)
	running(j, 2, structs.TaskSize{CPU: 8 * mhz}, 4, structs.TaskSize{CPU: 3 * mhz}, 2*time.Minute)
	task(j, structs.RolePS, 0).CPUMHz = 7.6 * mhz // 95%
	task(j, structs.RolePS, 1).CPUMHz = 7.5 * mhz // 94%
	p := plan(t, h, New())
	must.Eq(t, map[string]int{fmt.Sprintf("ps %d/0", 16*mhz): 2, fmt.Sprintf("worker %d/0", 3*mhz): 4}, sizes(p))
	must.Len(t, 2, p.Actions)
	must.Eq(t, structs.ActionResized, p.Actions[0].Kind)

	running(j, 2, structs.TaskSize{}, 4, structs.TaskSize{CPU: 3 * mhz}, 2*time.Minute)
	task(j, structs.RolePS, 0).CPUMHz = 31 * mhz
	task(j, structs.RolePS, 1).CPUMHz = 30 * mhz
	p = plan(t, h, New())
	must.Eq(t, 3, p.NumPS)
	must.StrContains(t, p.Reason, "one more server, 2 → 3")
}

// TestPlan_Grow: xDeepFM at its optimize shape with the servers using
// 27.4 of their 32 cores gains 2 workers by ΔN_w (D:164) when C_total
// leaves room, and none at the paper's C_total of 200 (A13).
func TestPlan_Grow(t *testing.T) {
	h, j := setup(t)
	running(j, 2, structs.TaskSize{CPU: 16 * mhz}, 8, structs.TaskSize{CPU: 20 * mhz}, 2*time.Minute)
	j.Usage.ByShape = []structs.ShapeUsage{{Shape: structs.Shape{PS: 2, Workers: 8}, WorkerCPUMHz: 18.3 * mhz, PSCPUMHz: 27.4 * mhz, Measurements: 4}}
	p := plan(t, h, New())
	must.True(t, p.SameTasks(j.Current))
	must.StrContains(t, p.Reason, "ΔN_w = +2, but the job is at C_total = 200 cores")

	alg := New()
	must.NoError(t, alg.(planner.Configurable).SetConfig(map[string]string{"c_total": "240"}))
	p = plan(t, h, alg)
	must.Eq(t, 10, p.NumWorkers)
	must.Eq(t, 2, p.NumPS)
	must.Eq(t, map[string]int{fmt.Sprintf("ps %d/0", 16*mhz): 2, fmt.Sprintf("worker %d/0", 20*mhz): 8, fmt.Sprintf("worker %d/3600", 19*mhz): 2}, sizes(p))
	must.StrContains(t, p.Reason, "ΔN_w = min(⌈s_total/ŝ⌉, √K) − N_w = 2")
}

func TestSetConfig(t *testing.T) {
	d := New().(*DLRover)
	must.NoError(t, d.SetConfig(map[string]string{"c_total": "100", "k": "36", "core_mhz": "2000"}))
	must.Eq(t, 100.0, d.opts.TotalCores)
	must.Eq(t, 36.0, d.opts.K)
	must.Eq(t, 2000, d.opts.CoreMHz)
	must.Eq(t, 32.0, d.opts.PodCores)

	err := d.SetConfig(map[string]string{"c_total": "-1", "ps_util": "2", "bogus": "1", "min_interval": "x"})
	must.ErrorContains(t, err, `c_total = "-1"`)
	must.ErrorContains(t, err, `ps_util = "2"`)
	must.ErrorContains(t, err, `unknown option "bogus"`)
	must.ErrorContains(t, err, `min_interval = "x"`)
	must.Eq(t, 100.0, d.opts.TotalCores, must.Sprint("a failed SetConfig changes nothing"))
}
