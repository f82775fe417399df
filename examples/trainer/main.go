package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caravan-sched/caravan/collector/client"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// closeTimeout bounds the chief's last flush of samples when training is
// over; stopping on a signal leaves it less.
const (
	closeTimeout     = 10 * time.Second
	stopCloseTimeout = 2 * time.Second
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// run is the trainer; it returns the exit status: 0 when training is
// done, 2 for a configuration error, 128+n after signal n, 1 otherwise.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:   "trainer",
		Level:  hclog.LevelFromString(cfg.LogLevel),
		Output: stderr,
	}).Named(cfg.Role).With("rank", cfg.Rank, "generation", cfg.Generation)
	log.Info("starting", "job_id", cfg.JobID, "namespace", cfg.Namespace, "role", cfg.Role,
		"num_ps", cfg.NumPS, "num_workers", cfg.NumWorkers, "mode", cfg.Mode, "resume", cfg.Resume,
		"local_batch", cfg.LocalBatch, "global_batch", cfg.GlobalBatch, "steps_per_epoch", cfg.StepsPerEpoch,
		"features", cfg.Features, "examples", cfg.Examples, "lr", cfg.LR, "sample_cost", cfg.SampleCost,
		"checkpoint_dir", cfg.CheckpointDir, "checkpoint_signal", cfg.SignalName, "checkpoint_interval", cfg.CheckpointInterval,
		"stop_timeout", cfg.StopTimeout, "pid", os.Getpid())

	// Every process catches the checkpoint signal, so that it never ends
	// one; only the chief acts on it.
	ckptRequested := new(atomic.Bool)
	ckptSignals := make(chan os.Signal, 1)
	signal.Notify(ckptSignals, cfg.Signal)
	go func() {
		for range ckptSignals {
			if cfg.chief() {
				log.Info("checkpoint requested; writing it at the next step boundary", "signal", cfg.SignalName)
				ckptRequested.Store(true)
			} else {
				log.Debug("checkpoint signal ignored: the chief (worker 0) checkpoints", "signal", cfg.SignalName)
			}
		}
	}()

	// A stop signal (SIGINT, SIGTERM: Nomad stopping the task) does not
	// end a process at once: the chief checkpoints at the next step
	// boundary, reports it and ends the generation, which ends every
	// other process of it. Processes still running after StopTimeout are
	// cancelled; a second signal exits at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	stopSignals := make(chan os.Signal, 2)
	signal.Notify(stopSignals, os.Interrupt, syscall.SIGTERM)
	var stoppedBy atomic.Value
	go func() {
		sig := (<-stopSignals).(syscall.Signal)
		stoppedBy.Store(sig)
		close(stop)
		if cfg.chief() {
			log.Info("stopping; checkpointing at the next step boundary first", "signal", sig.String(), "timeout", cfg.StopTimeout)
		} else {
			log.Info("stopping once the chief has checkpointed", "signal", sig.String(), "timeout", cfg.StopTimeout)
		}
		select {
		case <-stopSignals:
			log.Warn("stopped again; exiting now")
			os.Exit(128 + int(sig))
		case <-time.After(cfg.StopTimeout):
		}
		log.Warn("did not stop in time; cancelling", "timeout", cfg.StopTimeout)
		cancel()
		select {
		case <-stopSignals:
		case <-time.After(stopCloseTimeout + time.Second):
		}
		log.Warn("did not stop in time; exiting now")
		os.Exit(128 + int(sig))
	}()

	err = nil
	switch cfg.Role {
	case structs.RolePS:
		err = runPS(ctx, cfg, log)
	case structs.RoleWorker:
		rep, rerr := newReporter(cfg, log)
		if rerr != nil {
			log.Error("cannot report progress", "error", rerr)
			return 2
		}
		if len(cfg.ProfileBatches) > 0 {
			err = runProfile(ctx, cfg, log, rep)
		} else {
			err = runWorker(ctx, cfg, log, rep, ckptRequested, stop)
		}
		timeout := closeTimeout
		if ctx.Err() != nil || closed(stop) {
			timeout = stopCloseTimeout
		}
		cctx, ccancel := context.WithTimeout(context.Background(), timeout)
		if cerr := rep.Close(cctx); cerr != nil {
			log.Warn("some samples were not delivered", "error", cerr)
		}
		ccancel()
	}
	if sig, ok := stoppedBy.Load().(syscall.Signal); ok {
		log.Info("stopped", "signal", sig.String())
		return 128 + int(sig)
	}
	if err != nil {
		log.Error("training failed", "error", err)
		return 1
	}
	log.Info("exiting")
	return 0
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// newReporter returns a worker's collector client; parameter servers
// report nothing.
func newReporter(cfg *config, log hclog.Logger) (reporter, error) {
	if cfg.Role == structs.RolePS {
		return logReporter{log: log}, nil
	}
	if cfg.CollectorAddr == "" {
		log.Warn("no collector address; samples are only logged at debug level", "env", envCollector)
		return logReporter{log: log}, nil
	}
	addrs, err := client.ParseAddrs(cfg.CollectorAddr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envCollector, err)
	}
	return client.New(client.Config{Addrs: addrs, Logger: log.Named("collector")})
}
