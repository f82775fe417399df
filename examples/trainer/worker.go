package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/collector/client"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// dialTimeout bounds one connection attempt to a parameter server.
const dialTimeout = 5 * time.Second

// retryWait is the pause between two attempts to reach a parameter server.
const retryWait = 200 * time.Millisecond

// stepTimes splits the time of worker steps into computation (the
// gradient and the simulated accelerator time) and communication (pulls
// and pushes, including the wait for the other workers at the barrier).
type stepTimes struct {
	cpu, net time.Duration
	iters    int64
}

// worker trains: each step it pulls the parameters from every parameter
// server, computes the gradient of its batch, spends the simulated
// accelerator time, and pushes each server its slice of the gradient.
// Worker 0 is also the chief.
type worker struct {
	cfg   *config
	log   hclog.Logger
	data  *dataset
	ps    []*psClient
	chief *chief
	// coord admits the step's phases when the node has a subtask
	// coordinator (CARAVAN_COORDINATOR_ADDR); nil coordinates nothing.
	coord  *client.Coordinator
	phases *phaseLog
	// ballast is the memory the worker holds to grow (-ballast-mb); nil
	// until it starts.
	ballast *ballast
	// rep is where a worker other than the chief reports its own time
	// per step (the chief reports through chief); own accumulates that
	// time since the last report: computing and pushing, not waiting
	// for the other workers.
	rep reporter
	own stepTimes
	// pass is the gradient of one pass or microbatch; sqr holds, per
	// parameter server, the squared norms of the step's microbatch
	// gradients over its slice, micro how many there were (0 in async
	// mode); pulled is what the servers said of the last step applied
	// (batch.go).
	pass   []float64
	sqr    []float64
	micro  int
	pulled GradStats
}

// runWorker trains until the parameter servers say training is done
// (nil), ctx ends (ctx.Err()), or a parameter server stays unreachable.
// Once stop is closed, the chief checkpoints at the next step boundary
// and ends the generation (the others learn it as training done).
func runWorker(ctx context.Context, cfg *config, log hclog.Logger, rep reporter, ckptRequested *atomic.Bool, stop <-chan struct{}) error {
	if err := cfg.fits(cfg.LocalBatch); err != nil {
		return err
	}
	addrs, err := waitForPS(ctx, cfg.CheckpointDir, cfg.Generation, cfg.NumPS, cfg.RendezvousTimeout)
	if err != nil {
		return fmt.Errorf("rendezvous: %w", err)
	}
	w := &worker{cfg: cfg, log: log, data: newDataset(cfg.Seed, cfg.Features, cfg.Examples), rep: rep,
		pass: make([]float64, cfg.Features), sqr: make([]float64, cfg.NumPS)}
	if cfg.CoordinatorAddr != "" {
		holder := fmt.Sprintf("%s/worker-%d", cfg.JobID, cfg.Rank)
		if w.coord, err = client.NewCoordinator(client.CoordinatorConfig{Addr: cfg.CoordinatorAddr, Holder: holder, Logger: log}); err != nil {
			return fmt.Errorf("%s: %w", envCoordinator, err)
		}
		log.Info("phases coordinated by the node's subtask coordinator", "addr", cfg.CoordinatorAddr)
	}
	if w.phases, err = openPhaseLog(cfg); err != nil {
		return err
	}
	defer w.phases.close()
	for r, a := range addrs {
		offset, length := partition(cfg.Features, cfg.NumPS, r)
		w.ps = append(w.ps, &psClient{cfg: cfg, log: log, rank: r, offset: offset, length: length, addr: a.Addr, incarnation: a.Incarnation})
	}
	defer func() {
		for _, p := range w.ps {
			p.close()
		}
	}()
	log.Info("found the parameter servers", "ps", len(addrs))
	if cfg.chief() {
		if w.chief, err = newChief(cfg, log, rep, w.data, ckptRequested, stop); err != nil {
			return err
		}
		if err := removeOldRendezvous(cfg.CheckpointDir, cfg.Generation); err != nil {
			log.Warn("could not remove the rendezvous files of earlier generations", "error", err)
		}
	}
	return w.train(ctx)
}

func (w *worker) train(ctx context.Context) error {
	cfg := w.cfg
	params := make([]float64, cfg.Features)
	grad := make([]float64, cfg.Features)
	version := int64(-1)
	// The first step waits for every worker to start, as long as the
	// rendezvous may take; later steps as long as an RPC.
	patience := cfg.RendezvousTimeout
	var times stepTimes
	last := int64(-1) // the last step trained on
	for iter := int64(0); ; iter++ {
		start := time.Now()
		var v int64
		err := w.phase(ctx, client.ResourceNet, "pull", &v, func() (err error) {
			v, err = w.pullAll(ctx, version, params, patience)
			return err
		})
		if errors.Is(err, errDone) {
			w.log.Info("training is done", "last_step", last)
			return nil
		}
		if err != nil {
			return err
		}
		pulled := time.Now()
		times.net += pulled.Sub(start)
		patience = cfg.RPCTimeout

		// The chief evaluates the loss of step v on the host CPU while the
		// simulated accelerator computes, as a real trainer would overlap
		// them; only an evaluation longer than that shows in the step.
		var evaluated chan float64
		if w.chief != nil {
			evaluated = make(chan float64, 1)
			go func() { evaluated <- logLoss(params, w.chief.eval) }()
		}
		batchStep := v
		if cfg.Mode == structs.ModeAsync {
			batchStep = iter // versions repeat across workers in async mode
		}
		if cfg.BallastMB > 0 && cfg.Rank == cfg.BallastRank && v >= cfg.BallastAfterStep && w.ballast == nil {
			w.ballast = growBallast(ctx, w.log, cfg.BallastMB, cfg.BallastRate)
		}
		passes := make([]batch, cfg.AccumSteps+1)
		for a := range passes {
			passes[a] = w.data.trainBatch(batchStep, cfg.Rank, a, cfg.LocalBatch)
		}
		computeStart := time.Now()
		err = w.phase(ctx, client.ResourceCPU, "compute", &v, func() error {
			w.gradient(params, passes, grad)
			return nil
		})
		if err != nil {
			return err
		}
		if err := sleep(ctx, cfg.computeTime(cfg.LocalBatch*len(passes))); err != nil {
			return err
		}
		if err := w.slowDown(ctx, time.Since(computeStart)); err != nil {
			return err
		}
		if w.chief != nil {
			w.chief.observeGrad(w.pulled)
			loss := <-evaluated
			computed := time.Now()
			// times holds the previous step's computation and push, and
			// this pull: the step that ended at pulled.
			stop, err := w.chief.atStep(ctx, w, v, loss, times, pulled)
			if err != nil {
				return err
			}
			if stop {
				w.finish(ctx)
				return nil
			}
			// What the chief did at the boundary (reporting, a checkpoint)
			// counts as neither computation nor communication.
			pulled = pulled.Add(time.Since(computed))
		}
		times = stepTimes{cpu: time.Since(pulled), iters: 1}

		pushStart := time.Now()
		err = w.phase(ctx, client.ResourceNet, "push", &v, func() error { return w.pushAll(ctx, v, grad) })
		times.net += time.Since(pushStart)
		w.own.cpu += times.cpu
		w.own.net += time.Since(pushStart)
		w.own.iters++
		if w.chief == nil && w.own.iters >= cfg.ReportEvery {
			w.reportOwn(v)
		}
		if errors.Is(err, errDone) {
			w.log.Info("training is done", "last_step", v)
			return nil
		}
		if err != nil {
			return err
		}
		last = v
		if cfg.Mode == structs.ModeSync {
			version = v + 1
		}
	}
}

// gradient writes into grad the step's gradient, the average of its
// passes' (one without accumulation), and, in sync mode, the squared
// norms of its microbatches' gradients per parameter server slice into
// w.sqr and their number into w.micro: each pass is a microbatch, and a
// lone worker with one pass counts the two halves of its batch (a batch
// of odd size makes halves one example apart; the estimate then assumes
// them equal). A job without accumulation computes its gradient as it
// always did.
func (w *worker) gradient(params []float64, passes []batch, grad []float64) {
	cfg := w.cfg
	sync := cfg.Mode == structs.ModeSync
	clear(w.sqr)
	w.micro = 0
	if len(passes) == 1 {
		lossGrad(params, passes[0], cfg.L2, grad)
	} else {
		clear(grad)
		for _, b := range passes {
			lossGrad(params, b, cfg.L2, w.pass)
			for j, g := range w.pass {
				grad[j] += g
			}
			if sync {
				sqrNorms(w.pass, cfg.Features, cfg.NumPS, w.sqr)
			}
		}
		inv := 1 / float64(len(passes))
		for j := range grad {
			grad[j] *= inv
		}
	}
	for _, b := range passes {
		cpuWork(params, b, cfg.L2, cfg.CPUWork)
	}
	if !sync {
		return
	}
	w.micro = len(passes)
	if n := len(passes[0].y); len(passes) == 1 && cfg.NumWorkers == 1 && n >= 2 {
		// g = (h·g₁ + (n−h)·g₂)/n: the second half's gradient follows
		// from the whole's and the first's.
		h := n / 2
		lossGrad(params, batch{x: passes[0].x[:h*cfg.Features], y: passes[0].y[:h]}, cfg.L2, w.pass)
		sqrNorms(w.pass, cfg.Features, cfg.NumPS, w.sqr)
		for j := range w.pass {
			w.pass[j] = (float64(n)*grad[j] - float64(h)*w.pass[j]) / float64(n-h)
		}
		sqrNorms(w.pass, cfg.Features, cfg.NumPS, w.sqr)
		w.micro = 2
	} else if len(passes) == 1 {
		sqrNorms(grad, cfg.Features, cfg.NumPS, w.sqr)
	}
}

// ownStepTime returns the worker's own time per step since the last
// call (computing and pushing; 0 before a step) and starts again.
func (w *worker) ownStepTime() float64 {
	o := w.own
	w.own = stepTimes{}
	if o.iters == 0 {
		return 0
	}
	return (o.cpu + o.net).Seconds() / float64(o.iters)
}

// reportOwn sends the sample of a worker other than the chief after step
// v: its own time per step, for straggler detection.
func (w *worker) reportOwn(v int64) {
	cfg := w.cfg
	w.rep.Report(structs.Sample{
		Namespace: cfg.Namespace, JobID: cfg.JobID, Role: structs.RoleWorker, Rank: cfg.Rank,
		Step: v, Epoch: float64(v) / float64(cfg.StepsPerEpoch), TaskStepTimeS: w.ownStepTime(), AllocID: cfg.AllocID,
		NumPS: cfg.NumPS, NumWorkers: cfg.NumWorkers, Time: time.Now().UnixNano(),
	})
}

// slowDown makes a worker on a node listed in -slow-nodes take
// -slow-factor times the computation time took of its step.
func (w *worker) slowDown(ctx context.Context, took time.Duration) error {
	if w.cfg.SlowNodes == "" {
		return nil
	}
	b, err := os.ReadFile(w.cfg.SlowNodes)
	if err != nil {
		return nil // no file: no slow node
	}
	if !slices.Contains(strings.Fields(string(b)), w.cfg.Node) {
		return nil
	}
	return sleep(ctx, time.Duration(float64(took)*(w.cfg.SlowFactor-1)))
}

// phase runs fn, one phase of step *step, as a subtask using resource:
// once the node's coordinator admits it (at once without one), logged to
// -phase-log. It returns fn's error, or ctx's if ctx ends while waiting.
func (w *worker) phase(ctx context.Context, resource, name string, step *int64, fn func() error) error {
	asked := time.Now()
	lease, err := w.coord.Acquire(ctx, resource)
	if err != nil {
		return err
	}
	start := time.Now()
	err = fn()
	end := time.Now() // before the release, which lets the next phase in
	lease.Release()
	w.phases.add(*step, name, asked, start, end)
	return err
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pullAll fills params from every parameter server. In sync mode it
// returns the parameters of step version (or of the servers' current step
// when version is negative), all servers at the same step; in async mode
// whatever each server has, and the lowest of their steps.
func (w *worker) pullAll(ctx context.Context, version int64, params []float64, patience time.Duration) (int64, error) {
	for {
		replies := make([]PullReply, len(w.ps))
		errs := make([]error, len(w.ps))
		var wg sync.WaitGroup
		for i, p := range w.ps {
			wg.Go(func() { replies[i], errs[i] = p.pull(ctx, version, patience) })
		}
		wg.Wait()
		for _, err := range errs {
			if errors.Is(err, errDone) {
				return version, errDone
			}
		}
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		lo, hi := replies[0].Version, replies[0].Version
		for _, r := range replies {
			lo, hi = min(lo, r.Version), max(hi, r.Version)
		}
		if lo != hi && w.cfg.Mode == structs.ModeSync {
			// A server applied a step the others have not yet: ask them
			// all for that one.
			version = hi
			continue
		}
		for i, p := range w.ps {
			copy(params[p.offset:p.offset+p.length], replies[i].Params)
		}
		w.pulled = wholeStats(replies)
		return lo, nil
	}
}

// pushAll sends every parameter server its slice of grad for step
// version.
func (w *worker) pushAll(ctx context.Context, version int64, grad []float64) error {
	gain := 0.0 // the chief's says
	if w.chief != nil {
		gain = w.chief.gain()
	}
	errs := make([]error, len(w.ps))
	var wg sync.WaitGroup
	for i, p := range w.ps {
		wg.Go(func() {
			var reply PushReply
			args := PushArgs{Rank: w.cfg.Rank, Version: version, Grad: grad[p.offset : p.offset+p.length], Pad: pad(w.cfg.CommBytes),
				SqrNorm: w.sqr[p.rank], Micro: w.micro, LRGain: gain}
			errs[i] = p.call(ctx, "PS.Push", args, &reply, &reply.Incarnation, w.cfg.RPCTimeout)
			switch {
			case errs[i] != nil:
			case reply.Done:
				errs[i] = errDone
			case reply.Stale:
				w.log.Debug("push for a step already applied", "ps", p.rank, "step", version)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, errDone) {
			return errDone
		}
	}
	return errors.Join(errs...)
}

// finish tells every parameter server that training is done. A server
// that cannot be told will find out when its workers are gone.
func (w *worker) finish(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range w.ps {
		wg.Go(func() {
			var reply FinishReply
			if err := p.call(ctx, "PS.Finish", FinishArgs{}, &reply, &reply.Incarnation, w.cfg.RPCTimeout); err != nil {
				w.log.Warn("could not tell a parameter server that training is done", "ps", p.rank, "error", err)
			}
		})
	}
	wg.Wait()
}

// psClient is a worker's connection to one parameter server. It is used
// by one goroutine at a time.
type psClient struct {
	cfg            *config
	log            hclog.Logger
	rank           int
	offset, length int
	// addr and incarnation are what the rendezvous file said; a server
	// restarted in place publishes a new address and incarnation.
	addr        string
	incarnation string
	client      *rpc.Client
	// failing is set while the server is unreachable, to log an outage
	// once.
	failing bool
}

// errPSRestarted means a parameter server restarted and lost its state:
// only a restart of the whole job from a checkpoint can recover.
var errPSRestarted = errors.New("parameter server restarted and lost its state")

func (p *psClient) close() {
	if p.client != nil {
		p.client.Close()
		p.client = nil
	}
}

// pull asks for the server's slice at version, asking again while the
// server answers NotReady, for up to patience.
func (p *psClient) pull(ctx context.Context, version int64, patience time.Duration) (PullReply, error) {
	start := time.Now()
	for {
		var reply PullReply
		if err := p.call(ctx, "PS.Pull", PullArgs{Rank: p.cfg.Rank, Version: version, Pad: p.cfg.CommBytes}, &reply, &reply.Incarnation, patience); err != nil {
			return reply, err
		}
		if reply.Done {
			return reply, errDone
		}
		if !reply.NotReady {
			if len(reply.Params) != p.length {
				return reply, fmt.Errorf("ps-%d sent %d parameters; it should own %d: worker and parameter server disagree on -features or %s", p.rank, len(reply.Params), p.length, envNumPS)
			}
			return reply, nil
		}
		if waited := time.Since(start); waited > patience {
			return reply, fmt.Errorf("ps-%d has not applied step %d after %v: another worker may be gone", p.rank, version, waited.Round(time.Second))
		}
	}
}

// call makes one RPC, reconnecting and retrying while the server is
// unreachable, for up to patience. An error the server returns is not
// retried. incarnation points into reply.
func (p *psClient) call(ctx context.Context, method string, args, reply any, incarnation *string, patience time.Duration) error {
	start := time.Now()
	for {
		err := p.try(ctx, method, args, reply)
		if err == nil {
			if p.failing {
				p.failing = false
				p.log.Info("parameter server reachable again", "ps", p.rank, "addr", p.addr)
			}
			if *incarnation != p.incarnation {
				return fmt.Errorf("ps-%d: %w", p.rank, errPSRestarted)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errPSRestarted) {
			return err
		}
		var serverErr rpc.ServerError
		if errors.As(err, &serverErr) {
			return fmt.Errorf("ps-%d %s: %w", p.rank, method, err)
		}
		p.close()
		if isDone(p.cfg.CheckpointDir, p.cfg.Generation) {
			return errDone // the servers finished and left
		}
		if waited := time.Since(start); waited > patience {
			return fmt.Errorf("ps-%d at %s unreachable for %v (-rpc-timeout): %w", p.rank, p.addr, waited.Round(time.Second), err)
		}
		if !p.failing {
			p.failing = true
			p.log.Warn("parameter server unreachable; retrying", "ps", p.rank, "addr", p.addr, "error", err)
		}
		if err := sleep(ctx, retryWait); err != nil {
			return err
		}
	}
}

// try makes one attempt, connecting first if needed. The answer of a call
// must come within the RPC timeout (a Pull is held for pullWait at most).
func (p *psClient) try(ctx context.Context, method string, args, reply any) error {
	if p.client == nil {
		// The server may have restarted in place under a new address.
		if a, err := readPS(p.cfg.CheckpointDir, p.cfg.Generation, p.rank); err == nil {
			p.addr = a.Addr
			if a.Incarnation != p.incarnation {
				return fmt.Errorf("ps-%d: %w", p.rank, errPSRestarted)
			}
		}
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		conn, err := d.DialContext(dctx, "tcp", p.addr)
		cancel()
		if err != nil {
			return err
		}
		p.client = rpc.NewClient(newPacedConn(conn, p.cfg.LinkRate))
	}
	// gob leaves the fields a message does not carry (zero values) as
	// they are: clear what a failed attempt may have decoded.
	reflect.ValueOf(reply).Elem().SetZero()
	call := p.client.Go(method, args, reply, make(chan *rpc.Call, 1))
	timer := time.NewTimer(pullWait + p.cfg.RPCTimeout)
	defer timer.Stop()
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("%s: no answer within %v", method, pullWait+p.cfg.RPCTimeout)
	}
}
