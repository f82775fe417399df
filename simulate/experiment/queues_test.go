package experiment

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/queuespec"
	"github.com/caravan-sched/caravan/simulate"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestQueuesPhilly_Synthetic computes the queues experiment's goals and
// tables from made-up results of its three runs: two tenants of 2 GPUs
// each, whose jobs take 100 s without quotas, 200 s under static
// partitioning, and under queues 100 s and 108 s, tenant b's job waiting
// 10 s for a's borrowed GPUs.
func TestQueuesPhilly_Synthetic(t *testing.T) {
	e, ok := Get("queues-philly")
	must.True(t, ok)
	quotas := []*structs.Queue{
		{Name: "vc-a", Namespaces: []string{"vc-a"}, Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "*", Nominal: 2}}}},
		{Name: "vc-b", Namespaces: []string{"vc-b"}, Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "*", Nominal: 2}}}},
	}
	result := func(finishA, finishB, waitB float64, queues []*structs.Queue) *simulate.Result {
		r := &simulate.Result{Policy: queuesPolicy, TotalGPUs: 4, Queues: queues,
			Jobs: []sim.JobResult{
				{Namespace: "vc-a", JobID: "a", MinGPUs: 2, Arrival: 0, Start: 0, Finish: finishA},
				{Namespace: "vc-b", JobID: "b", MinGPUs: 2, Arrival: 0, Start: waitB, Finish: finishB},
			},
			Summary: simulate.Summary{AvgJCT: (finishA + finishB) / 2, GPUUtil: 0.5},
		}
		if waitB > 0 {
			r.Allocs = append(r.Allocs, sim.AllocChange{Time: 0, JobID: "a", GPUs: 4}, sim.AllocChange{Time: waitB, JobID: "a", GPUs: 2})
		} else {
			r.Allocs = append(r.Allocs, sim.AllocChange{Time: 0, JobID: "a", GPUs: 2})
		}
		r.Allocs = append(r.Allocs, sim.AllocChange{Time: waitB, JobID: "b", GPUs: 2},
			sim.AllocChange{Time: finishA, JobID: "a", GPUs: 0}, sim.AllocChange{Time: finishB, JobID: "b", GPUs: 0})
		return r
	}
	seed := Seed{Seed: 1, Results: map[string]map[string]*simulate.Result{
		queuesNone:   {queuesPolicy: result(100, 100, 0, nil)},
		queuesStatic: {queuesPolicy: result(200, 200, 0, quotas)},
		queuesShared: {queuesPolicy: result(100, 108, 10, quotas)},
	}}
	want := []struct {
		value float64
		met   bool
	}{{1.04, true}, {200 / 104.0, true}, {10, true}}
	var values []Value
	for i := range e.Metrics {
		m := &e.Metrics[i]
		v, err := m.Value(seed)
		must.NoError(t, err)
		must.Eq(t, want[i].value, v, must.Sprint(m.Name))
		must.Eq(t, want[i].met, m.Met(v), must.Sprint(m.Name))
		values = append(values, Value{Metric: m, Mean: v, PerSeed: []float64{v}})
	}
	// A violation beyond a round and the checkpoint misses the goal.
	must.False(t, e.Metrics[2].Met(91))

	o := &Outcome{Experiment: e, Seeds: []Seed{seed}, Values: values, Queues: map[string][]*structs.Queue{queuesStatic: quotas, queuesShared: quotas}}
	tables := queuesTables(o)
	must.Len(t, 3, tables)
	must.Eq(t, [][]string{
		{"variant", "mean JCT (s)", "p99 JCT (s)", "÷ no quotas", "GPU util", "violations (GPU-s)", "longest (s)"},
		{"no quotas", "100", "100", "1.00×", "50.0%", "0", "0"},
		{"static", "200", "200", "2.00×", "50.0%", "0", "0"},
		{"queues", "104", "108", "1.04×", "50.0%", "20", "10"},
	}, tables[0].Rows)
	must.Eq(t, []string{"vc-b", "2", "1", "100", "100", "200", "200", "108", "108"}, tables[1].Rows[2])
	must.Eq(t, []string{"vc-b", "2", "0 (0 s)", "0 (0 s)", "20 (10 s)"}, tables[2].Rows[2])
	must.Eq(t, []string{"all", "4", "2", "100", "100", "200", "200", "104", "108"}, tables[1].Rows[3])
	md := o.Format("abc1234")
	must.StrContains(t, md, "| metric | here | goal | here ÷ goal | verdict |")
	t.Log(md)
	must.Eq(t, 3, strings.Count(md, "| met |"))
}

// TestWriteQueues: the queue file a run writes is what `caravan sim
// -queues` reads back as the run's queues.
func TestWriteQueues(t *testing.T) {
	p, err := simulate.Prepare(simulate.Setup{Workload: simulate.PhillyTenantsWorkload + ":1", Policies: []string{queuesPolicy}, Seed: 1, Assume: simulate.AssumeCaravan})
	must.NoError(t, err)
	must.Eq(t, 4*len(p.Workload.NodeGPUs), p.TotalGPUs())
	for _, variant := range []string{queuesStatic, queuesShared} {
		p.Options.Queues, err = simulate.TenantQueues(p.Workload, p.TotalGPUs(), variant)
		must.NoError(t, err)
		path := filepath.Join(t.TempDir(), "queues.hcl")
		must.NoError(t, writeQueues(path, Run{Queues: variant}, p))
		back, diags := queuespec.ParseFile(path)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		must.Eq(t, p.Options.Queues, back)
	}
}
