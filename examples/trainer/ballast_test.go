package main

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// TestGrowBallast: the ballast grows to its size at its rate and then
// holds it.
func TestGrowBallast(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	b := growBallast(ctx, hclog.NewNullLogger(), 4, 100)
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return b.size() == 4 }),
		wait.Timeout(5*time.Second), wait.Gap(5*time.Millisecond)))
	must.GreaterEq(t, 40*time.Millisecond, time.Since(start), must.Sprint("4 MB at 100 MB/s take 40 ms"))
	for _, c := range b.chunks {
		must.Eq(t, 1<<20, len(c))
		must.Eq(t, 1, c[pageSize])
	}
}
