package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/structs"
)

// benchServer starts a leader with its Raft log on disk (raft-boltdb) and
// no driver activity: the benchmarks measure Raft apply throughput.
func benchServer(b *testing.B, servers int) *Server {
	driver := simDriver(b, 1)
	if servers == 1 {
		s := TestServer(b, TestConfig(b, driver))
		return leaderOf(b, s)
	}
	return leaderOf(b, cluster(b, servers, driver)...)
}

// BenchmarkApply measures how many registrations and sample batches (of
// maxSampleBatch samples) per second the leader commits, one at a time and
// with 32 in flight, on one server and on a 3-server cluster.
func BenchmarkApply(b *testing.B) {
	for _, servers := range []int{1, 3} {
		for _, inFlight := range []int{1, 32} {
			b.Run(fmt.Sprintf("servers=%d/in-flight=%d/job-register", servers, inFlight), func(b *testing.B) {
				s := benchServer(b, servers)
				var n atomic.Int64
				applyParallel(b, inFlight, func() error {
					j := structs.MockJob()
					j.ID = fmt.Sprintf("job-%d", n.Add(1))
					j.Canonicalize()
					_, _, err := s.apply(context.Background(), fsm.JobRegisterType, &fsm.JobRegisterRequest{Job: j, MustBeNew: true, Time: 1})
					return err
				})
			})
			b.Run(fmt.Sprintf("servers=%d/in-flight=%d/sample-batch", servers, inFlight), func(b *testing.B) {
				s := benchServer(b, servers)
				j := structs.MockJob()
				j.Canonicalize()
				if _, _, err := s.apply(context.Background(), fsm.JobRegisterType, &fsm.JobRegisterRequest{Job: j, Time: 1}); err != nil {
					b.Fatal(err)
				}
				batch := make([]structs.Sample, maxSampleBatch)
				for i := range batch {
					batch[i] = structs.Sample{JobID: j.ID, Step: int64(i), Loss: 1, StepTimeS: 0.1, NumPS: 1, NumWorkers: 2}
				}
				applyParallel(b, inFlight, func() error {
					_, _, err := s.apply(context.Background(), fsm.SampleBatchType, &fsm.SampleBatchRequest{Samples: batch})
					return err
				})
				b.ReportMetric(float64(b.N*maxSampleBatch)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}

// applyParallel runs b.N applies with inFlight goroutines and reports ops/s.
func applyParallel(b *testing.B, inFlight int, apply func() error) {
	var next atomic.Int64
	errs := make(chan error, inFlight)
	b.ResetTimer()
	for range inFlight {
		go func() {
			for next.Add(1) <= int64(b.N) {
				if err := apply(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range inFlight {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
