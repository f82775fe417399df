package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

func testCoordinator(t *testing.T) (*coord.Coordinator, string) {
	t.Helper()
	c, err := coord.New(coord.Config{})
	must.NoError(t, err)
	t.Cleanup(c.Close)
	mux := http.NewServeMux()
	c.Register(mux, nil)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// TestCoordinator_NilIsNoOp: without CARAVAN_COORDINATOR_ADDR, phases run
// at once and nothing is contacted.
func TestCoordinator_NilIsNoOp(t *testing.T) {
	t.Setenv(EnvCoordinatorAddr, "")
	c, err := CoordinatorFromEnv("a/worker-0", nil)
	must.NoError(t, err)
	must.Nil(t, c)
	ran := 0
	must.NoError(t, c.Compute(context.Background(), func() error { ran++; return nil }))
	must.NoError(t, c.Communicate(context.Background(), func() error { ran++; return nil }))
	must.Eq(t, 2, ran)
	must.Eq(t, CoordinatorStats{}, c.Stats())

	t.Setenv(EnvCoordinatorAddr, "ftp://x")
	_, err = CoordinatorFromEnv("a", nil)
	must.ErrorContains(t, err, EnvCoordinatorAddr)
}

// TestCoordinator_Interleaves: two jobs' compute phases never overlap
// through the client, while a communication phase runs beside them.
func TestCoordinator_Interleaves(t *testing.T) {
	srv, addr := testCoordinator(t)
	var inCPU, overlaps atomic.Int32
	var wg sync.WaitGroup
	for _, job := range []string{"a", "b"} {
		t.Setenv(EnvCoordinatorAddr, addr)
		c, err := CoordinatorFromEnv(job+"/worker-0", hclog.NewNullLogger())
		must.NoError(t, err)
		wg.Go(func() {
			for range 20 {
				must.NoError(t, c.Compute(context.Background(), func() error {
					if inCPU.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond) // the phase's work
					inCPU.Add(-1)
					return nil
				}))
				must.NoError(t, c.Communicate(context.Background(), func() error { return nil }))
			}
			must.Eq(t, uint64(40), c.Stats().Granted)
		})
	}
	wg.Wait()
	must.Eq(t, 0, overlaps.Load())
	st := srv.Status().Resources
	must.Eq(t, uint64(40), st[coord.CPU].Released)
	must.Eq(t, uint64(40), st[coord.Net].Released)
	must.Eq(t, 1, st[coord.CPU].MaxHolders)
}

// TestCoordinator_FailsOpen: an unreachable coordinator costs one failed
// attempt, then phases run uncoordinated until the backoff passes; a
// context that ends while waiting returns its error and the phase does
// not run.
func TestCoordinator_FailsOpen(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	addr := dead.URL
	dead.Close()
	c, err := NewCoordinator(CoordinatorConfig{Addr: addr, Logger: hclog.NewNullLogger(), Backoff: time.Hour})
	must.NoError(t, err)
	for range 3 {
		ran := false
		must.NoError(t, c.Compute(context.Background(), func() error { ran = true; return nil }))
		must.True(t, ran)
	}
	must.Eq(t, CoordinatorStats{Uncoordinated: 3}, c.Stats())

	srv, live := testCoordinator(t)
	c, err = NewCoordinator(CoordinatorConfig{Addr: live, Logger: hclog.NewNullLogger()})
	must.NoError(t, err)
	l, err := c.Acquire(context.Background(), ResourceCPU)
	must.NoError(t, err)
	must.Eq(t, "cpu", l.Role)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = c.Compute(ctx, func() error { t.Fatal("the phase ran without its slot"); return nil })
	must.ErrorIs(t, err, context.DeadlineExceeded)
	l.Release()
	l.Release() // expired or released: ignored
	must.Eq(t, 0, srv.Status().Resources[coord.CPU].Holders)
}
