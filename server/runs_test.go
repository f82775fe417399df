package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// staticDriver runs whatever it is asked at once, on one node: what runs
// of each job is the placement of the last plan that named it.
type staticDriver struct {
	mu      sync.Mutex
	running map[structs.JobKey]*structs.Placement
}

func newStaticDriver() *staticDriver {
	return &staticDriver{running: map[structs.JobKey]*structs.Placement{}}
}

func (d *staticDriver) Nodes(context.Context) ([]*structs.Node, error) {
	return []*structs.Node{{ID: "node-1", Name: "node-1", Datacenter: "dc1", Status: structs.NodeStatusReady, Eligible: true, CPU: 64000, MemoryMB: 256 << 10}}, nil
}

func (d *staticDriver) Enact(_ context.Context, plan *structs.Plan, _ []*structs.Job) ([]*structs.JobReport, error) {
	d.mu.Lock()
	clear(d.running)
	for _, p := range plan.Placements {
		if !p.Paused() {
			d.running[p.Key()] = p.Copy()
		}
	}
	d.mu.Unlock()
	return d.Status(context.Background())
}

func (d *staticDriver) Status(context.Context) ([]*structs.JobReport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*structs.JobReport
	for key, p := range d.running {
		out = append(out, &structs.JobReport{Namespace: key.Namespace, JobID: key.ID, Status: structs.JobStatusRunning, Placement: p.Copy()})
	}
	return out, nil
}

// pushSource is a metrics source a test pushes samples into.
type pushSource struct {
	mu      sync.Mutex
	samples []structs.Sample
}

func (p *pushSource) push(smps ...structs.Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples = append(p.samples, smps...)
}

func (p *pushSource) Samples(_ context.Context, cursor uint64) ([]structs.Sample, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(cursor) >= len(p.samples) {
		return nil, cursor, nil
	}
	return append([]structs.Sample(nil), p.samples[cursor:]...), uint64(len(p.samples)), nil
}

// trainingSamples are a run's first steps, reported at the placement
// that runs: loss falling as from 1/(0.5k + 1).
func trainingSamples(id string, p *structs.Placement, from time.Time, steps int, scale float64) []structs.Sample {
	var out []structs.Sample
	for k := 1; k <= steps; k++ {
		out = append(out, structs.Sample{
			JobID: id, Step: int64(k), Loss: scale / (0.5*float64(k) + 1), StepTimeS: 0.1,
			NumPS: p.NumPS, NumWorkers: p.NumWorkers, Time: from.Add(time.Duration(k) * time.Second).UnixNano(),
		})
	}
	return out
}

// manualServer starts a server in Manual mode on a staticDriver and a
// pushSource, and waits for it to lead.
func manualServer(t *testing.T) (*Server, *pushSource) {
	src := &pushSource{}
	cfg := TestConfig(t, newStaticDriver())
	cfg.Manual, cfg.Metrics, cfg.Profiler = true, src, nil
	s := TestServer(t, cfg)
	leaderOf(t, s)
	return s, src
}

// steps runs the leader loop's steps until check holds.
func steps(t *testing.T, s *Server, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Step(context.Background())
		if err == nil {
			err = check()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// placed returns a check that the running leader placed job id.
func placed(s *Server, id string) func() error {
	return func() error {
		l := manualLeader(s)
		if l == nil {
			return ErrNotLeader
		}
		if p := desiredOf(l, id); p == nil || p.Paused() {
			return fmt.Errorf("job %s is not placed", id)
		}
		return nil
	}
}

// modelOf returns the running leader's model of a job, nil when it has
// none.
func modelOf(l *leader, id string) *structs.JobModel {
	for _, m := range l.models.Summaries() {
		if m.JobID == id {
			return m
		}
	}
	return nil
}

// TestLeader_NewRunStartsAfresh stops or purges a job whose models were
// fitted from its samples, registers it again, and reports samples of the
// new run: the running leader's models are the new run's alone, and a new
// leader, built from the replicated state, has the same.
func TestLeader_NewRunStartsAfresh(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(fmt.Sprintf("purge=%t", purge), func(t *testing.T) {
			s, src := manualServer(t)
			c := client(t, s)
			_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
			must.NoError(t, err)
			steps(t, s, "job placed", placed(s, "a"))

			p := desiredOf(manualLeader(s), "a")
			src.push(trainingSamples("a", p, time.Now().Add(-time.Hour), 3, 1)...)
			steps(t, s, "first run's samples ingested", func() error {
				if m := modelOf(manualLeader(s), "a"); m == nil || m.Step != 3 {
					return fmt.Errorf("model %+v, want step 3", m)
				}
				return nil
			})

			_, err = c.Jobs().Stop("a", purge, nil)
			must.NoError(t, err)
			steps(t, s, "job stopped", func() error {
				if modelOf(manualLeader(s), "a") != nil {
					return fmt.Errorf("job still scheduled")
				}
				return nil
			})
			_, _, err = c.Jobs().Register(demoJob(t, "a"), nil)
			must.NoError(t, err)
			steps(t, s, "job placed again", placed(s, "a"))
			// The new run's loss curve is another: the old one's must not
			// mix in.
			src.push(trainingSamples("a", p, time.Now().Add(-time.Minute), 2, 4)...)
			steps(t, s, "second run's samples ingested", func() error {
				if m := modelOf(manualLeader(s), "a"); m == nil || m.Step != 2 {
					return fmt.Errorf("model %+v, want step 2", m)
				}
				return nil
			})

			// A new leader rebuilds the same models from the state.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			next := s.newLeader(ctx)
			must.NotNil(t, next)
			must.Eq(t, modelOf(manualLeader(s), "a"), modelOf(next, "a"))
		})
	}
}

// manualLeader returns the leader's state in Manual mode.
func manualLeader(s *Server) *leader {
	s.manualMu.Lock()
	defer s.manualMu.Unlock()
	return s.manual
}

// desiredOf returns the placement the leader last committed for a job.
func desiredOf(l *leader, id string) *structs.Placement {
	if r := l.runOf(structs.NewJobKey("", id)); r != nil {
		return r.desired
	}
	return nil
}
