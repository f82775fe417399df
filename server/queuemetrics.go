package server

import (
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/prometheus/client_golang/prometheus"
)

// queueLabels label the per-queue series: the queue, and the resource as
// structs.QueueResource names it ("gpu/<type>", "cpu", "memory").
var queueLabels = []string{"queue", "resource"}

// queueGauge is one per-queue gauge: its help text and what it reads of a
// queue's usage of one resource.
type queueGauge struct {
	desc  *prometheus.Desc
	value func(r *structs.QueueResource) int
}

// queueGauges are the per-queue series /v1/metrics answers, a sample per
// queue and resource of its usage (Queue.Usage), computed from the
// replicated state at each scrape, so that they follow every committed
// decision on every server and a deleted queue's series end with it.
var queueGauges = []queueGauge{
	{prometheus.NewDesc("caravan_queue_nominal", "The queue's nominal quota of the resource (GPUs, CPU MHz or memory MB).", queueLabels, nil), func(r *structs.QueueResource) int { return r.Nominal }},
	{prometheus.NewDesc("caravan_queue_used", "What the placements of the queue's jobs hold of the resource under the latest decision.", queueLabels, nil), func(r *structs.QueueResource) int { return r.Used }},
	{prometheus.NewDesc("caravan_queue_borrowed", "What the queue's jobs use of the resource beyond its nominal quota.", queueLabels, nil), func(r *structs.QueueResource) int { return r.Borrowed }},
	{prometheus.NewDesc("caravan_queue_lent", "The part of the queue's idle nominal quota of the resource that queues of its cohort borrow.", queueLabels, nil), func(r *structs.QueueResource) int { return r.Lent }},
	{prometheus.NewDesc("caravan_queue_pending", "What the queue's paused jobs, and those below their minimum, lack of the resource to run at their minimum.", queueLabels, nil), func(r *structs.QueueResource) int { return r.Pending }},
}

// queueCollector is a prometheus.Collector of the per-queue gauges of one
// server's state. Collect reads a snapshot of the state; it is safe for
// concurrent use.
type queueCollector struct{ s *Server }

var _ prometheus.Collector = (*queueCollector)(nil)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range queueGauges {
		ch <- g.desc
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	// Prometheus gathers on goroutines of its own, where a panic would
	// end the server: a bug in the usage's arithmetic costs the series.
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("queue usage failed; no queue series this scrape", "panic", r)
		}
	}()
	txn := c.s.State().Txn()
	queues, err := state.Queues(txn, nil)
	if err != nil || len(queues) == 0 {
		if err != nil {
			c.s.log.Warn("cannot read queues for metrics", "error", err)
		}
		return
	}
	u, err := readQueueUsage(txn, nil, queues)
	if err != nil {
		c.s.log.Warn("cannot read queue usage for metrics", "error", err)
		return
	}
	for _, q := range queues {
		st := u.status(q, false)
		if st.Usage == nil {
			continue
		}
		for i := range st.Usage.Resources {
			r := &st.Usage.Resources[i]
			for _, g := range queueGauges {
				ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.value(r)), q.Name, r.Resource)
			}
		}
	}
}
