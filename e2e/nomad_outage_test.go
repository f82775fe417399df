//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// silentNomad is a reverse proxy to Nomad that can stop answering: while
// silent, every request waits, unanswered, until its client gives up or
// Nomad speaks again.
type silentNomad struct {
	*httptest.Server
	mu      sync.Mutex
	silence chan struct{} // closed when Nomad speaks again; nil while it does
	// held counts the requests held while silent, answered those
	// answered since Nomad last spoke again.
	held, answered int
}

func newSilentNomad(t *testing.T, nomadAddr string) *silentNomad {
	target, err := url.Parse(nomadAddr)
	must.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	s := &silentNomad{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		silence := s.silence
		if silence != nil {
			s.held++
		}
		s.mu.Unlock()
		if silence != nil {
			select {
			case <-silence:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
		s.mu.Lock()
		s.answered++
		s.mu.Unlock()
	}))
	t.Cleanup(func() {
		s.speak()
		s.Close()
	})
	return s
}

func (s *silentNomad) silent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.silence == nil {
		s.silence = make(chan struct{})
	}
}

// speak ends the silence and returns how many requests it held.
func (s *silentNomad) speak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.silence != nil {
		close(s.silence)
		s.silence = nil
	}
	s.answered = 0
	return s.held
}

// answeredSince is how many requests were answered since Nomad last spoke
// again.
func (s *silentNomad) answeredSince() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answered
}

// TestCaravanNomad_NomadSilent runs a trainer job whose samples reach the
// leader only through collector sidecars in Consul, and then makes Nomad
// answer nothing to Caravan for a minute (its clients keep running the
// tasks). Meanwhile the leader keeps committing the collectors' samples
// and answering dry runs, and stops nothing; once Nomad answers again, the
// job runs on at the same Nomad version, never restarted.
func TestCaravanNomad_NomadSilent(t *testing.T) {
	t.Parallel()
	consul := agent.StartConsul(t)
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	bin := agent.BuildCaravan(t)
	nomad := newSilentNomad(t, nc.Address)

	// Trainers report to their sidecars alone, so that samples reach the
	// state through the leader loop's collectors.
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "this test's trainers report to their sidecars only", http.StatusServiceUnavailable)
	}))
	t.Cleanup(sink.Close)
	silentNC := *nc
	silentNC.Address = nomad.URL
	// Nomad calls outwait the silence: a leader loop that waited on one
	// would answer no dry run until Nomad speaks again.
	nomadExtra := fmt.Sprintf("collector_command = %q\n  report_addrs      = [%q]\n  call_timeout      = \"10m\"", bin, sink.URL)
	body := nomadAgentBodyWith(&silentNC, t.TempDir(), "drf", nomadExtra, "") +
		fmt.Sprintf("consul {\n  address = %q\n}\n", consul.HTTPAddr)
	cl := startCaravans(t, bin, 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 4)

	// A job that trains for longer than the test: it never converges.
	job := trainerJobSpec{
		ID: "a", Trainer: trainer, MaxWorkers: 2,
		WorkerArgs: []string{"-features", "100", "-examples", "20000", "-sample-cost", "5ms"},
		PSArgs:     []string{"-features", "100", "-examples", "20000"},
		Threshold:  1e-9, Patience: 100, MaxEpochs: 10000,
	}.request()
	_, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "a", 10)
	version := nomadJobVersion(t, nc, "a")

	nomad.silent()
	silentFrom := time.Now()
	step := lastStep(t, c, "a")
	dryRuns, slowest := 0, time.Duration(0)
	for time.Since(silentFrom) < time.Minute {
		// A dry run of another job is answered while Nomad is silent,
		// which a loop waiting on Nomad could not do before its 10
		// minute call timeout.
		start := time.Now()
		type answer struct {
			plan *api.PlanResponse
			err  error
		}
		answered := make(chan answer, 1)
		go func() {
			plan, _, err := c.Jobs().Plan(elasticTrainerJob("b", trainer, 2), nil)
			answered <- answer{plan, err}
		}()
		select {
		case a := <-answered:
			must.NoError(t, a.err, must.Sprint("a dry run while Nomad is silent"))
			must.NotNil(t, a.plan)
		case <-time.After(2 * time.Minute):
			t.Fatal("no dry run answered while Nomad is silent: the leader loop waits on Nomad")
		}
		dryRuns++
		slowest = max(slowest, time.Since(start))
		// The collectors' samples are committed.
		agent.WaitFor(t, 20*time.Second, "a newer sample committed while Nomad is silent", func() error {
			if now := lastStep(t, c, "a"); now <= step {
				return fmt.Errorf("step %d, as before", now)
			}
			return nil
		})
		step = lastStep(t, c, "a")
		sum := summary(t, c, "a")
		must.Eq(t, api.JobStatusRunning, sum.Job.Status, must.Sprintf("job status while Nomad is silent: %s", sum.Job.StatusDescription))
	}
	held := nomad.speak()
	t.Logf("Nomad silent for %v: %d requests held unanswered; %d dry runs, the slowest %v; job a reached step %d",
		time.Since(silentFrom).Round(time.Second), held, dryRuns, slowest.Round(time.Millisecond), step)
	must.Positive(t, held)

	// Nomad answers again: the leader sees the cluster as it was, and the
	// job goes on training where it was, never restarted or stopped.
	agent.WaitFor(t, 2*time.Minute, "Caravan reads Nomad again", func() error {
		if n := nomad.answeredSince(); n < 10 {
			return fmt.Errorf("%d requests answered since Nomad spoke again", n)
		}
		return nil
	})
	for i := range 2 {
		agent.WaitFor(t, 30*time.Second, "samples after the silence", func() error {
			if now := lastStep(t, c, "a"); now <= step {
				return fmt.Errorf("step %d, as %d polls ago", now, i)
			}
			return nil
		})
		step = lastStep(t, c, "a")
	}
	must.Eq(t, version, nomadJobVersion(t, nc, "a"), must.Sprint("the Nomad job was submitted again"))
	for _, typ := range []string{api.EventJobStopped, api.EventJobRestarted, api.EventJobRegistered} {
		n := 0
		if typ == api.EventJobRegistered {
			n = 1
		}
		must.SliceLen(t, n, events(t, c, "a", typ), must.Sprintf("%s events of job a", typ))
	}
	must.SliceLen(t, 1, events(t, c, "a", api.EventTasksRunning))
	must.Eq(t, api.JobStatusRunning, summary(t, c, "a").Job.Status)
}

// lastStep is the step of a job's newest committed sample, 0 without one.
func lastStep(t *testing.T, c *api.Client, id string) int64 {
	t.Helper()
	sum := summary(t, c, id)
	if sum.LastSample == nil {
		return 0
	}
	return sum.LastSample.Step
}
