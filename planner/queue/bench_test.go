package queue

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// BenchmarkApply: 1,000 jobs of 10 queues in two cohorts on 512 nodes of
// 8 GPUs, half A100 and half V100, after FIFO's decision, which gives
// some queues far beyond their quota.
func BenchmarkApply(b *testing.B) {
	req, queues := benchRequest()
	dec, err := fifo.New().Plan(req)
	must.NoError(b, err)
	out, pre := Apply(req, dec, queues, nil)
	must.NoError(b, planner.CheckDecision(req, out))
	b.Logf("%d preemptions", len(pre))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Apply(req, dec, queues, nil)
	}
}

// BenchmarkUsage: the usage of BenchmarkApply's queues under its decision
// within them, as a queue read or a metrics scrape computes it.
func BenchmarkUsage(b *testing.B) {
	req, queues := benchRequest()
	dec, err := fifo.New().Plan(req)
	must.NoError(b, err)
	dec, _ = Apply(req, dec, queues, nil)
	jobs := make([]*structs.Job, len(req.Jobs))
	for i, j := range req.Jobs {
		jobs[i] = j.Job
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Usage(queues, req.Nodes, jobs, dec.Placements)
	}
}

// benchRequest is 1,000 jobs of 10 queues in two cohorts on 512 nodes of
// 8 GPUs, half A100 and half V100.
func benchRequest() (*planner.Request, []*structs.Queue) {
	var nodes []*structs.Node
	for i := range 512 {
		model := "NVIDIA A100"
		if i%2 == 1 {
			model = "Tesla V100"
		}
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%03d", i), model, 8))
	}
	var queues []*structs.Queue
	for q := range 10 {
		queues = append(queues, gpuQueue(fmt.Sprint("ns-", q), []string{"c1", "c2"}[q%2],
			&structs.GPUQuota{Type: "A100", Nominal: 150}, &structs.GPUQuota{Type: "V100", Nominal: 150}))
	}
	var jobs []*planner.Job
	for i := range 1000 {
		// Early arrivals belong to few queues, so FIFO favours them.
		j := gpuJob(fmt.Sprint("ns-", (i*i/997)%10), fmt.Sprintf("job-%04d", i), 1+i%4, 4+i%8)
		j.Job.SubmitTime = int64(i)
		j.Job.Priority = 1 + i%100
		j.Step = float64(i % 37)
		jobs = append(jobs, j)
	}
	return &planner.Request{Nodes: nodes, Jobs: jobs}, queues
}
