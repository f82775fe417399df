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
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPacedConn: 1 MB through a link paced at 20 MB/s takes about 50 ms
// each way, not the microseconds of loopback.
func TestPacedConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	const n, rate = 1 << 20, 20 << 20
	paced := newPacedConn(a, rate)
	start := time.Now()
	go func() { _, _ = paced.Write(make([]byte, n)) }()
	_, err := io.ReadFull(b, make([]byte, n))
	must.NoError(t, err)
	write := time.Since(start)

	start = time.Now()
	go func() { _, _ = b.Write(make([]byte, n)) }()
	_, err = io.ReadFull(paced, make([]byte, n))
	must.NoError(t, err)
	read := time.Since(start)
	for _, d := range []time.Duration{write, read} {
		must.Between(t, 45*time.Millisecond, d, 2*time.Second)
	}
	must.Eq(t, a, newPacedConn(a, 0), must.Sprint("rate 0 is no pacing"))
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
