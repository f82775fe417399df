package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPacedConn: 1 MB through a link paced at 20 MB/s takes 50 ms each
// way, not the microseconds of loopback. The link runs on a clock that only
// its sleeps advance, so the time it takes is the time it asked for,
// whatever the machine's load; on the wall clock it takes at least that.
func TestPacedConn(t *testing.T) {
	const n, rate = 1 << 20, 20 << 20
	want := time.Duration(n) * time.Second / rate
	for _, dir := range []string{"write", "read"} {
		t.Run(dir, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			paced := newPacedConn(a, rate).(*pacedConn)
			var clock fakeClock
			paced.now, paced.sleep = clock.now, clock.sleep
			from, to := io.Writer(paced), io.Reader(b)
			if dir == "read" {
				from, to = b, paced
			}
			go func() { _, _ = from.Write(make([]byte, n)) }()
			_, err := io.ReadFull(to, make([]byte, n))
			must.NoError(t, err)
			// The last bytes may stay booked up to paceSlack ahead.
			must.Between(t, want-paceSlack, clock.elapsed(), want, must.Sprint("the time the link slept"))
			must.LessEq(t, int64(n/pacedChunk/2), clock.sleeps(), must.Sprint("chunks under paceSlack share a sleep"))
		})
	}
	t.Run("on the wall clock", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		start := time.Now()
		go func() { _, _ = newPacedConn(a, rate).Write(make([]byte, n)) }()
		_, err := io.ReadFull(b, make([]byte, n))
		must.NoError(t, err)
		must.GreaterEq(t, want-paceSlack, time.Since(start), must.Sprint("a sleep never ends early"))
	})
	a, _ := net.Pipe()
	defer a.Close()
	must.Eq(t, a, newPacedConn(a, 0), must.Sprint("rate 0 is no pacing"))
}

// fakeClock is a clock that only its sleeps advance.
type fakeClock struct {
	mu    sync.Mutex
	slept time.Duration
	n     int64
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Unix(0, 0).Add(c.slept)
}

func (c *fakeClock) sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept += d
	c.n++
}

func (c *fakeClock) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}

func (c *fakeClock) sleeps() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestTrainerCoordinated trains with a subtask coordinator: every pull,
// computation and push is admitted and released, and logged to
// -phase-log.
func TestTrainerCoordinated(t *testing.T) {
	co, err := coord.New(coord.Config{})
	must.NoError(t, err)
	defer co.Close()
	mux := http.NewServeMux()
	co.Register(mux, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	dir, coll := t.TempDir(), newCollector(t)
	phases := filepath.Join(t.TempDir(), "phases.jsonl")
	env := trainingEnv(structs.ModeSync, 32, 1, 50, 1e-9, 1000, 0)
	env[envCoordinator] = srv.URL
	j := startJob(t, jobSpec{
		ps: 1, workers: 1, generation: "1", dir: dir, collector: coll, env: env,
		flags: []string{"-sample-cost", "0", "-cpu-work", "10", "-comm-bytes", "1000", "-max-steps", "20", "-phase-log", phases},
	})
	for name, code := range j.waitExit(30 * time.Second) {
		must.Eq(t, 0, code, must.Sprintf("exit status of %s", name))
	}
	st := co.Status().Resources
	must.Eq(t, uint64(21), st[coord.CPU].Granted, must.Sprint("steps 0 to 20 computed"))
	must.Eq(t, st[coord.CPU].Granted, st[coord.CPU].Released)
	must.Eq(t, st[coord.Net].Granted, st[coord.Net].Released)
	must.GreaterEq(t, uint64(41), st[coord.Net].Granted, must.Sprint("a pull and a push per step"))

	f, err := os.Open(phases)
	must.NoError(t, err)
	defer f.Close()
	count := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p phase
		must.NoError(t, json.Unmarshal(sc.Bytes(), &p))
		must.Eq(t, "logreg", p.Job)
		must.LessEq(t, p.End, p.Start)
		count[p.Phase]++
	}
	must.Eq(t, 21, count["compute"])
	must.Eq(t, int(st[coord.Net].Granted), count["pull"]+count["push"])
}
