package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

func testPS(t *testing.T, mode string, numPS, rank, workers int) *paramServer {
	t.Helper()
	cfg := &config{
		Role: structs.RolePS, Rank: rank, NumPS: numPS, NumWorkers: workers, Mode: mode,
		Features: 6, LR: 0.5, CheckpointDir: t.TempDir(), Generation: "1",
	}
	return newParamServer(cfg, hclog.NewNullLogger())
}

func pull(t *testing.T, s *paramServer, rank int, version int64) PullReply {
	t.Helper()
	var r PullReply
	must.NoError(t, s.Pull(PullArgs{Rank: rank, Version: version}, &r))
	return r
}

func push(t *testing.T, s *paramServer, rank int, version int64, grad ...float64) PushReply {
	t.Helper()
	var r PushReply
	must.NoError(t, s.Push(PushArgs{Rank: rank, Version: version, Grad: grad}, &r))
	return r
}

// TestSyncBarrier: a step is applied once every worker pushed, as the
// average of their gradients; retries and stale pushes change nothing.
func TestSyncBarrier(t *testing.T) {
	s := testPS(t, structs.ModeSync, 2, 1, 2) // owns parameters [3, 6)
	must.Eq(t, 3, s.offset)
	r := pull(t, s, 0, 0)
	must.Eq(t, 0, r.Version)
	must.Eq(t, []float64{0, 0, 0}, r.Params)

	// A pull for step 1 waits until both workers pushed step 0.
	pulled := make(chan PullReply)
	go func() {
		var r PullReply
		err := s.Pull(PullArgs{Rank: 1, Version: 1}, &r)
		if err != nil {
			t.Error(err)
		}
		pulled <- r
	}()
	must.False(t, push(t, s, 0, 0, 2, 4, 6).Stale)
	must.False(t, push(t, s, 0, 0, 100, 100, 100).Stale, must.Sprint("a second push of a worker is ignored"))
	must.Eq(t, 0, s.currentStep())
	push(t, s, 1, 0, 0, 0, 2)
	got := <-pulled
	must.False(t, got.NotReady)
	must.Eq(t, 1, got.Version)
	// lr 0.5 times the mean gradient (1, 2, 4).
	must.Eq(t, []float64{-0.5, -1, -2}, got.Params)

	must.True(t, push(t, s, 0, 0, 1, 1, 1).Stale, must.Sprint("step 0 is applied already"))
	var reply PushReply
	must.ErrorContains(t, s.Push(PushArgs{Rank: 0, Version: 5, Grad: []float64{1, 1, 1}}, &reply), "at step 1")
	must.ErrorContains(t, s.Push(PushArgs{Rank: 2, Version: 1, Grad: []float64{1, 1, 1}}, &reply), "rank 2 is not below 2")
	must.ErrorContains(t, s.Push(PushArgs{Rank: 0, Version: 1, Grad: []float64{1}}, &reply), "owns 3")
	must.Eq(t, []float64{-0.5, -1, -2}, pull(t, s, 0, 1).Params)
}

func TestAsyncAppliesEachPush(t *testing.T) {
	s := testPS(t, structs.ModeAsync, 1, 0, 2)
	push(t, s, 1, 0, 1, 1, 1, 1, 1, 1)
	push(t, s, 0, 0, 1, 0, 0, 0, 0, 0)
	r := pull(t, s, 0, -1)
	must.Eq(t, 2, r.Version)
	must.Eq(t, []float64{-1, -0.5, -0.5, -0.5, -0.5, -0.5}, r.Params)
}

// TestFinish: once the chief says training is done, every call answers
// Done, and the server finishes when every worker heard it.
func TestFinish(t *testing.T) {
	s := testPS(t, structs.ModeSync, 1, 0, 3)
	waiting := make(chan PullReply)
	go func() {
		var r PullReply
		_ = s.Pull(PullArgs{Rank: 1, Version: 1}, &r)
		waiting <- r
	}()
	var fr FinishReply
	must.NoError(t, s.Finish(FinishArgs{}, &fr))
	must.Eq(t, s.incarnation, fr.Incarnation)
	must.True(t, (<-waiting).Done, must.Sprint("a waiting pull is woken"))
	select {
	case <-s.finished:
		t.Fatal("worker 2 has not been told yet")
	default:
	}
	must.True(t, push(t, s, 2, 0, 0, 0, 0, 0, 0, 0).Done)
	<-s.finished
}

func TestCheckpointAndRestore(t *testing.T) {
	// Two servers of 3 parameters each write a checkpoint.
	a, b := testPS(t, structs.ModeSync, 2, 0, 1), testPS(t, structs.ModeSync, 2, 1, 1)
	b.cfg.CheckpointDir = a.cfg.CheckpointDir
	b.root = a.root
	push(t, a, 0, 0, 1, 2, 3)
	push(t, b, 0, 0, 4, 5, 6)
	var ra, rb CheckpointReply
	var wrong CheckpointReply
	must.ErrorContains(t, a.Checkpoint(CheckpointArgs{Tag: "t", Step: 0}, &wrong), "at step 1")
	must.NoError(t, a.Checkpoint(CheckpointArgs{Tag: "t", Step: 1}, &ra))
	must.NoError(t, b.Checkpoint(CheckpointArgs{Tag: "t", Step: 1}, &rb))
	must.NoError(t, writeManifest(a.root, &manifest{Version: manifestVersion, Step: 1, Features: 6, Shards: []shardRef{ra.Shard, rb.Shard}}))

	// One server of all 6 parameters resumes from it.
	c := testPS(t, structs.ModeSync, 1, 0, 1)
	c.cfg.CheckpointDir, c.root = a.cfg.CheckpointDir, a.root
	ok, err := c.restore()
	must.NoError(t, err)
	must.True(t, ok)
	r := pull(t, c, 0, -1)
	must.Eq(t, 1, r.Version)
	must.Eq(t, []float64{-0.5, -1, -1.5, -2, -2.5, -3}, r.Params)

	// No checkpoint: step 0.
	d := testPS(t, structs.ModeSync, 1, 0, 1)
	ok, err = d.restore()
	must.NoError(t, err)
	must.False(t, ok)
	must.Eq(t, 0, d.currentStep())
}

// TestPSClient_GoneAfterDone: a worker whose parameter server has left
// after training finished (its last reply lost with the connection) sees
// the done marker and stops cleanly instead of retrying until it fails.
func TestPSClient_GoneAfterDone(t *testing.T) {
	cfg := &config{CheckpointDir: t.TempDir(), Generation: "2", RPCTimeout: time.Hour}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := l.Addr().String()
	must.NoError(t, l.Close()) // nothing listens there any more
	p := &psClient{cfg: cfg, log: hclog.NewNullLogger(), addr: addr}

	must.NoError(t, markDone(cfg.CheckpointDir, "2"))
	// Without the marker the call would retry for the hour of -rpc-timeout
	// and end with the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var reply FinishReply
	err = p.call(ctx, "PS.Finish", FinishArgs{}, &reply, &reply.Incarnation, cfg.RPCTimeout)
	must.ErrorIs(t, err, errDone)
}
