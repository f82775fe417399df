package sim

import (
	"context"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// dlroverDriver is a Driver on a virtual clock over four DLRover nodes
// whose jobs have truth.
func dlroverDriver(t *testing.T, truth Truth) (*Driver, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	d := NewDriver(DriverConfig{
		Cluster: Config{Nodes: 4, CPU: DLRoverNodeCPU, MemoryMB: DLRoverNodeMem, RestartPenalty: 30 * time.Second,
			SampleInterval: 30 * time.Second, Seed: 1, Attributes: map[string]string{"cpu.frequency": "2500"}},
		Clock: clk.Now, Logger: testLogger(t),
		Truth: func(*structs.Job) Truth { return truth },
	})
	return d, clk
}

// table2 places W&D at Table 2 over four nodes: 2 servers of 16 cores and
// 8 GB and 6 workers of 3 cores and worker MB each.
func table2(job *structs.Job, workerMB int) *structs.Plan {
	p := &structs.Placement{Namespace: job.Namespace, JobID: job.ID, NumPS: 8, NumWorkers: 24}
	for i := range 4 {
		p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: []string{"node-00", "node-01", "node-02", "node-03"}[i], PS: 2, Workers: 6,
			PSSize: structs.TaskSize{CPU: 40000, MemoryMB: 8192}, WorkerSize: structs.TaskSize{CPU: 7500, MemoryMB: workerMB}})
	}
	return &structs.Plan{Index: 1, Placements: []*structs.Placement{p}}
}

func report(t *testing.T, d *Driver) *structs.JobReport {
	t.Helper()
	rs, err := d.Status(context.Background())
	must.NoError(t, err)
	must.SliceLen(t, 1, rs)
	return rs[0]
}

// TestDriver_Usage: a DLRover job reports each task's usage with its
// status: role, rank, node, CPU and memory used and given, each worker's
// step time, and the running means at its shape (ŵ and ŝ_total of Table
// 1's optimize row), stamped on the wall clock.
func TestDriver_Usage(t *testing.T) {
	job := DLRoverJob("wd", WideDeep)
	d, clk := dlroverDriver(t, &DLRoverTruth{Model: WideDeep, CoreMHz: 2500})
	nodes, err := d.Nodes(context.Background())
	must.NoError(t, err)
	must.Eq(t, "2500", nodes[0].Attributes["cpu.frequency"])
	_, err = d.Enact(context.Background(), table2(job, 4096), []*structs.Job{job})
	must.NoError(t, err)
	must.Nil(t, report(t, d).Usage, must.Sprint("no sample yet"))

	clk.Add(2 * time.Minute) // restart, then samples at 60 s, 90 s, 120 s
	r := report(t, d)
	u := r.Usage
	must.NotNil(t, u)
	must.False(t, r.Replan)
	must.Eq(t, clk.Now().UnixNano(), u.Time)
	must.SliceLen(t, 32, u.Tasks)
	ps, w := u.Tasks[0], u.Tasks[8]
	must.Eq(t, structs.RolePS, ps.Role)
	must.Eq(t, 0, ps.Rank)
	must.Eq(t, structs.RoleWorker, w.Role)
	must.Eq(t, 0, w.Rank)
	must.Eq(t, "node-00", w.NodeID)
	must.Eq(t, 40000, ps.CPULimitMHz)
	must.Eq(t, 8192, ps.MemoryLimitMB)
	must.Eq(t, 7500, w.CPULimitMHz)
	must.Eq(t, 4096, w.MemoryLimitMB)
	must.Eq(t, structs.UsageSourceSim, w.Source)
	must.Eq(t, 40000.0, ps.CPUMHz, must.Sprint("a hot server is saturated"))
	within(t, "worker step time", w.TaskStepTimeS, 24/210.0, 0.02)
	must.Greater(t, WideDeep.Update, ps.TaskStepTimeS, must.Sprint("a hot server takes longer than t_u to apply a step"))
	must.Eq(t, WideDeep.WorkerMemoryMB, w.MaxMemoryMB)
	must.Greater(t, WideDeep.PSBaseMB, ps.MemoryMB, must.Sprint("the model grows in the servers"))
	must.Eq(t, 0, w.OOMKills)

	s := u.Shape(structs.Shape{PS: 8, Workers: 24})
	must.NotNil(t, s)
	must.Eq(t, 3, s.Measurements)
	within(t, "ŵ", s.WorkerCPUMHz/2500, 2.3, 0.05)
	within(t, "ŝ_total", s.PSCPUMHz/2500, 85.1, 0.05)
}

// TestDriver_OOM: a worker below its memory need is killed when the job
// starts: the report asks for a new plan and its usage counts the kill at
// its wall time; a new placement starts a new generation without it; a
// job never placed again fails after OOMFailAfter.
func TestDriver_OOM(t *testing.T) {
	job := DLRoverJob("wd", WideDeep)
	d, clk := dlroverDriver(t, &DLRoverTruth{Model: WideDeep, CoreMHz: 2500})
	start := clk.Now()
	_, err := d.Enact(context.Background(), table2(job, 2048), []*structs.Job{job})
	must.NoError(t, err)
	clk.Add(time.Minute)
	r := report(t, d)
	must.True(t, r.Replan)
	must.StrContains(t, r.Message, "OOM-killed at its memory of 2048 MB")
	must.Eq(t, 0.0, float64(r.Step))
	w := r.Usage.Tasks[8]
	must.Eq(t, 1, w.OOMKills)
	must.Eq(t, start.Add(30*time.Second).UnixNano(), w.LastOOM, must.Sprint("killed as it starts, after the restart"))
	must.Eq(t, 0, r.Usage.Tasks[9].OOMKills, must.Sprint("only the first worker is counted"))

	_, err = d.Enact(context.Background(), table2(job, 4096), nil)
	must.NoError(t, err)
	clk.Add(time.Minute)
	r = report(t, d)
	must.False(t, r.Replan)
	must.Eq(t, 0, r.Usage.Tasks[8].OOMKills, must.Sprint("a new generation"))
	must.Greater(t, 0, float64(r.Step))

	_, err = d.Enact(context.Background(), table2(job, 2048), nil)
	must.NoError(t, err)
	clk.Add(OOMFailAfter + time.Minute)
	r = report(t, d)
	must.Eq(t, structs.JobStatusFailed, r.Status)
}

// TestKeepPSRanks: a server that stays keeps its rank and so its
// partition; a hot server's replacement on another node takes its rank.
func TestKeepPSRanks(t *testing.T) {
	ps := func(rank, node, cpu int) SimTask {
		return SimTask{Role: structs.RolePS, Rank: rank, Node: node, CPU: cpu}
	}
	prev := []SimTask{ps(0, 0, 40000), ps(1, 0, 40000), ps(2, 1, 40000)}
	next := []SimTask{ps(0, 0, 40000), ps(1, 1, 40000), ps(2, 2, 65000)}
	keepPSRanks(prev, next)
	must.Eq(t, []int{0, 2, 1}, []int{next[0].Rank, next[1].Rank, next[2].Rank})
}
