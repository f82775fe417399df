//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/collectors"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// startCollector starts an in-process collector registered in Consul for
// job and returns it; it is shut down when the test ends.
func startCollector(t *testing.T, consul *agent.Consul, job string) *collector.Collector {
	t.Helper()
	c, err := collector.New(collector.Config{
		Consul:       consul.Client,
		Registration: collector.Registration{Tags: []string{"job=" + job}, CheckInterval: 200 * time.Millisecond},
	})
	must.NoError(t, err)
	must.NoError(t, c.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
	return c
}

// gathered reads a Source after *cursor, as the leader does, until it
// returned want samples, and advances *cursor.
func gathered(t *testing.T, src *collectors.Source, cursor *uint64, want int) []structs.Sample {
	t.Helper()
	var all []structs.Sample
	agent.WaitFor(t, 30*time.Second, fmt.Sprintf("%d samples gathered", want), func() error {
		smps, next, err := src.Samples(context.Background(), *cursor)
		if err != nil {
			return err
		}
		all, *cursor = append(all, smps...), next
		if len(all) < want {
			return fmt.Errorf("%d of %d samples", len(all), want)
		}
		return nil
	})
	return all
}

// TestCollectors_DiscoverAndScrape runs real collectors registered in a
// real Consul agent: the source finds them, gathers their samples once
// each even when a collector is read again from its start, drops
// implausible ones, and stops scraping a collector that left.
func TestCollectors_DiscoverAndScrape(t *testing.T) {
	consul := agent.StartConsul(t)
	a := startCollector(t, consul, "a")
	b := startCollector(t, consul, "b")

	src := collectors.New(collectors.Config{Consul: consul.Client, Wait: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	report := func(c *collector.Collector, smps ...structs.Sample) {
		_, err := c.Report(smps)
		must.NoError(t, err)
	}
	report(a, structs.Sample{JobID: "a", Step: 1, Loss: 1, Time: 10}, structs.Sample{JobID: "a", Step: 2, Loss: 0.9, Time: 20})
	report(b, structs.Sample{JobID: "b", Step: 7, Loss: 2, Time: 30})
	// 10^12 samples in a second: a lying collector.
	report(b, structs.Sample{JobID: "b", Step: 8, Loss: 1.9, Samples: 1e12, StepTimeS: 1, Time: 40})
	var cursor uint64
	got := gathered(t, src, &cursor, 3)
	must.SliceLen(t, 3, got)
	flagged := 0
	for _, n := range src.Flagged() {
		flagged += n
	}
	must.Eq(t, 1, flagged, must.Sprint("the lying sample is flagged and dropped"))

	// The same samples again (a collector read from its start) are not
	// gathered twice; a new one is.
	report(a, structs.Sample{JobID: "a", Step: 2, Loss: 0.9, Time: 20}, structs.Sample{JobID: "a", Step: 3, Loss: 0.8, Time: 30})
	smps := gathered(t, src, &cursor, 1)
	must.Eq(t, []int64{3}, []int64{smps[0].Step})

	// A collector that leaves is deregistered and no longer scraped.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	must.NoError(t, b.Shutdown(sctx))
	agent.WaitFor(t, 30*time.Second, "collector b deregistered", func() error {
		entries, _, err := consul.Client.Health().Service(collectors.DefaultService, "", true, nil)
		if err != nil {
			return err
		}
		if len(entries) != 1 {
			return fmt.Errorf("%d collectors registered", len(entries))
		}
		return nil
	})
}
