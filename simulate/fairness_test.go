package simulate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestFairness_HandComputed: on 100 CPU, 1000 MB and 4 GPUs, a arrives at
// 0 and b at 50, each an all-reduce job of 1–4 workers of 10 CPU, 100 MB
// and 1 GPU. DRF gives a all 4 GPUs alone (share 1), 2 each together
// (0.5), and b all 4 once a has finished. The run keeps b waiting until a
// finishes at 100 (FIFO), then b holds 4 GPUs until 150:
//
//	span      a: s / ŝ   b: s / ŝ   eq. 2
//	[0, 50)   1 / 1      —          0
//	[50, 100) 1 / 0.5    0 / 0.5    1
//	[100,150) —          1 / 1      0
//
// a: share 1, DRF share 0.75, loss 0.25, shortfall 0; b: share 0.5, DRF
// share 0.75, loss and shortfall 0.25. Jain's index over the ratios 4/3
// and 2/3 is 2²/(2·(16/9 + 4/9)) = 0.9; the cluster's loss is 1 over 50 s
// of 150, 1/3 on average, 1 at most.
func TestFairness_HandComputed(t *testing.T) {
	worker := []float64{10, 100, 1}
	spec := func(id string) fairJob {
		j := &structs.Job{
			ID: id, Namespace: "default", Priority: 50, Weight: 1,
			Training: &structs.Training{Architecture: structs.ArchitectureAllReduce},
			Elastic:  &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 4}},
			Worker: &structs.Role{Resources: &structs.Resources{CPU: 10, MemoryMB: 100,
				Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}},
		}
		f := newFairJob(j)
		must.Eq(t, worker, f.demand.Worker)
		return f
	}
	jobs := []sim.JobResult{{JobID: "a", Arrival: 0, Start: 0, Finish: 100}, {JobID: "b", Arrival: 50, Start: 100, Finish: 150}}
	allocs := []sim.AllocChange{
		{Time: 0, JobID: "a", GPUs: 4, CPU: 40, MemoryMB: 400},
		{Time: 100, JobID: "a"},
		{Time: 100, JobID: "b", GPUs: 4, CPU: 40, MemoryMB: 400},
		{Time: 120, JobID: "stopped", GPUs: 4}, // not among the jobs: ignored
		{Time: 150, JobID: "b"},
	}
	perJob, f := fairness(jobs, []fairJob{spec("a"), spec("b")}, allocs, []float64{100, 1000, 4})

	want := []JobFairness{
		{JobID: "a", Life: 100, Share: 1, DRFShare: 0.75, Loss: 0.25},
		{JobID: "b", Life: 100, Share: 0.5, DRFShare: 0.75, Loss: 0.25, Shortfall: 0.25},
	}
	must.SliceLen(t, 2, perJob)
	for i, w := range want {
		g := perJob[i]
		must.Eq(t, w.JobID, g.JobID)
		for _, v := range [][3]any{{"life", w.Life, g.Life}, {"share", w.Share, g.Share}, {"drf share", w.DRFShare, g.DRFShare}, {"loss", w.Loss, g.Loss}, {"shortfall", w.Shortfall, g.Shortfall}} {
			must.InDelta(t, v[1].(float64), v[2].(float64), 1e-12, must.Sprintf("%s: %s", w.JobID, v[0]))
		}
	}
	must.InDelta(t, 4.0/3, perJob[0].Ratio(), 1e-12)
	must.InDelta(t, 0.9, f.Jain, 1e-12)
	must.InDelta(t, 1.0/3, f.Loss, 1e-12)
	must.InDelta(t, 1, f.MaxLoss, 1e-12)
	must.Eq(t, "a", f.WorstJob, must.Sprint("on a tie, the first job"))
	must.InDelta(t, 0.25, f.WorstJobLoss, 1e-12)
}

func TestJain(t *testing.T) {
	cases := []struct {
		x    []float64
		want float64
	}{
		{[]float64{1, 1, 1}, 1},
		{[]float64{2, 2}, 1},
		{[]float64{1, 0, 0}, 1.0 / 3},
		{[]float64{4.0 / 3, 2.0 / 3}, 0.9},
		{nil, 0},
		{[]float64{0, 0}, 0},
	}
	for _, tc := range cases {
		must.InDelta(t, tc.want, jain(tc.x), 1e-12, must.Sprintf("%v", tc.x))
	}
}

// TestFairness_DRFItself: DRF's own runs hold, at every moment, what
// fairshare.DRF gives the active jobs, so its Jain's index is 1 and its
// fairness loss 0, on all-reduce (Pollux) and on PS (parametric) jobs
// that the cluster holds without shrinking any to fit a node; FIFO's
// are not.
func TestFairness_DRFItself(t *testing.T) {
	for _, name := range []string{"pollux/workloads/workload-6.csv", "parametric:10:300"} {
		t.Run(name, func(t *testing.T) {
			wl, err := LoadWorkload(name, 1, 10)
			must.NoError(t, err)
			d, err := Run(wl, builtin.Algorithms["drf"](), Options{Cluster: sim.DefaultConfig()})
			must.NoError(t, err)
			must.SliceLen(t, 10, d.Fairness)
			for _, j := range d.Fairness {
				must.Positive(t, j.DRFShare, must.Sprint(j.JobID))
				must.InDelta(t, j.DRFShare, j.Share, 1e-9, must.Sprint(j.JobID))
			}
			must.InDelta(t, 1, d.Summary.Jain, 1e-9)
			must.InDelta(t, 0, d.Summary.Fairness.Loss, 1e-9)
			must.InDelta(t, 0, d.Summary.MaxLoss, 1e-9)

			f, err := Run(wl, builtin.Algorithms["fifo"](), Options{Cluster: sim.DefaultConfig()})
			must.NoError(t, err)
			must.Less(t, 0.99, f.Summary.Jain)
			must.Greater(t, 0.01, f.Summary.Fairness.Loss)
			must.GreaterEq(t, f.Summary.Fairness.Loss, f.Summary.MaxLoss)
			must.NotEq(t, "", f.Summary.WorstJob)
		})
	}
}

// TestFairness_Reported: summary.json and fairness.csv carry the
// fairness of every policy and job.
func TestFairness_Reported(t *testing.T) {
	wl, err := LoadWorkload("parametric:6:300", 1, 0)
	must.NoError(t, err)
	var results []*Result
	for _, p := range []string{"optimus", "drf"} {
		r, err := Run(wl, builtin.Algorithms[p](), Options{Cluster: sim.DefaultConfig()})
		must.NoError(t, err)
		results = append(results, r)
	}
	var buf bytes.Buffer
	must.NoError(t, NewReport("parametric:6:300", "16x4", 1, results).WriteJSON(&buf))
	var report struct {
		Policies map[string]map[string]any
	}
	must.NoError(t, json.Unmarshal(buf.Bytes(), &report))
	for _, p := range []string{"optimus", "drf"} {
		for _, k := range []string{"Jain", "FairnessLoss", "MaxFairnessLoss", "WorstJobLoss"} {
			must.MapContainsKey(t, report.Policies[p], k, must.Sprintf("%s: %s", p, k))
		}
	}
	must.Eq(t, results[1].Summary.Jain, report.Policies["drf"]["Jain"].(float64))

	buf.Reset()
	must.NoError(t, WriteFairnessCSV(&buf, results))
	rows, err := csv.NewReader(&buf).ReadAll()
	must.NoError(t, err)
	must.Eq(t, []string{"policy", "job", "life_s", "share", "drf_share", "ratio", "loss", "shortfall"}, rows[0])
	must.SliceLen(t, 1+2*6, rows, must.Sprint("a header and a row per job and policy"))
	must.Eq(t, []string{"optimus", "ps-000"}, rows[1][:2])
}
