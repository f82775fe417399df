package server

import (
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/prometheus/client_golang/prometheus"
)

// jobLabels label the per-job series.
var jobLabels = []string{"namespace", "job"}

// jobGauge is one per-job gauge: its help text and what it reads of
// a job's stub.
type jobGauge struct {
	desc  *prometheus.Desc
	value func(st *jobStubMetrics) float64
}

// jobStubMetrics is what the per-job gauges read of one active job.
type jobStubMetrics struct {
	ps, workers, nodes, gpus    int
	progress, remaining         float64
	lossRMSE, speedError, steps float64
	rescales                    int
}

// jobGauges are the per-job series /v1/metrics answers, read from the
// replicated state at each scrape, for the jobs that have not ended.
var jobGauges = []jobGauge{
	{prometheus.NewDesc("caravan_job_ps", "Parameter servers that run of the job.", jobLabels, nil), func(m *jobStubMetrics) float64 { return float64(m.ps) }},
	{prometheus.NewDesc("caravan_job_workers", "Workers that run of the job.", jobLabels, nil), func(m *jobStubMetrics) float64 { return float64(m.workers) }},
	{prometheus.NewDesc("caravan_job_nodes", "Nodes the job's tasks run on.", jobLabels, nil), func(m *jobStubMetrics) float64 { return float64(m.nodes) }},
	{prometheus.NewDesc("caravan_job_gpus", "GPU instances the job's running tasks request.", jobLabels, nil), func(m *jobStubMetrics) float64 { return float64(m.gpus) }},
	{prometheus.NewDesc("caravan_job_progress_ratio", "Last reported step over the predicted step of convergence, 0 to 1; 0 until the loss is fitted.", jobLabels, nil), func(m *jobStubMetrics) float64 { return m.progress }},
	{prometheus.NewDesc("caravan_job_step", "Last training step the job reported.", jobLabels, nil), func(m *jobStubMetrics) float64 { return m.steps }},
	{prometheus.NewDesc("caravan_job_remaining_seconds", "Predicted time to convergence at the current placement, in seconds of the server's clock (virtual on the simulated cluster); 0 when unknown.", jobLabels, nil), func(m *jobStubMetrics) float64 { return m.remaining }},
	{prometheus.NewDesc("caravan_job_loss_fit_rmse", "Root-mean-square residual of the loss fit, as a fraction of the largest loss; 0 until fitted.", jobLabels, nil), func(m *jobStubMetrics) float64 { return m.lossRMSE }},
	{prometheus.NewDesc("caravan_job_rescales", "Changes of what runs of the job since it was first placed, from its placement history (which keeps the last 64).", jobLabels, nil), func(m *jobStubMetrics) float64 { return float64(m.rescales) }},
	{prometheus.NewDesc("caravan_job_speed_fit_error_ratio", "Mean relative error of the speed fit over the configurations measured; 0 until fitted.", jobLabels, nil), func(m *jobStubMetrics) float64 { return m.speedError }},
}

// jobCollector is a prometheus.Collector of the per-job gauges of one
// server's state. Collect reads a snapshot of the state; it is safe for
// concurrent use.
type jobCollector struct{ s *Server }

var _ prometheus.Collector = (*jobCollector)(nil)

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range jobGauges {
		ch <- g.desc
	}
}

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	txn := c.s.State().Txn()
	jobs, err := state.Jobs(txn, nil, "")
	if err != nil {
		c.s.log.Warn("cannot read jobs for metrics", "error", err)
		return
	}
	for _, j := range jobs {
		if structs.Terminal(j.Status) {
			continue
		}
		st, err := c.s.jobStub(txn, nil, j, nil)
		if err != nil {
			c.s.log.Warn("cannot read job for metrics", "job_id", j.ID, "error", err)
			continue
		}
		m := &jobStubMetrics{ps: st.NumPS, workers: st.NumWorkers, nodes: st.Nodes, gpus: st.GPUs,
			progress: st.Progress, remaining: st.RemainingSeconds, steps: float64(st.Step)}
		if hist, err := state.Placements(txn, nil, j.Namespace, j.ID); err == nil && len(hist) > 1 {
			m.rescales = len(hist) - 1
		}
		if model, err := state.Model(txn, nil, j.Namespace, j.ID); err == nil && model != nil {
			m.lossRMSE, m.speedError = model.LossRMSE, model.SpeedError
		}
		for _, g := range jobGauges {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(m), j.Namespace, j.ID)
		}
	}
}
