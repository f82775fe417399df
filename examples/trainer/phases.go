package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"
)

// Bounds of the co-location knobs.
const (
	// maxCPUWork bounds -cpu-work: about 30µs a pass with the defaults.
	maxCPUWork = 1 << 20
	// maxCommBytes bounds -comm-bytes, and the padding a parameter server
	// sends back whatever a worker asks.
	maxCommBytes = 64 << 20
	// pacedChunk is the most bytes a paced connection moves in one go.
	pacedChunk = 16 << 10
	// paceSlack is how far ahead a paced link may be booked before the
	// caller waits.
	paceSlack = time.Millisecond
)

// cpuWork makes passes passes of the gradient of b at w, spread over
// every core: the computation phase of a step when -cpu-work is set, as
// a real trainer's computation uses the whole machine (§4.3.1: "a single
// CPU subtask usually uses almost all of the provided CPU resources").
// The gradients are thrown away; the work is real.
func cpuWork(w []float64, b batch, l2 float64, passes int) {
	if passes <= 0 {
		return
	}
	n := min(runtime.GOMAXPROCS(0), passes)
	var wg sync.WaitGroup
	for i := range n {
		share := passes / n
		if i < passes%n {
			share++
		}
		wg.Go(func() {
			g := make([]float64, len(w))
			for range share {
				lossGrad(w, b, l2, g)
			}
		})
	}
	wg.Wait()
}

// pacedConn is a connection whose reads and writes together move at
// most rate bytes/s each way: a simulated network link of that
// bandwidth, so that a communication phase waits on the "network"
// rather than spending the CPU copying bytes through loopback.
type pacedConn struct {
	net.Conn
	rate            float64
	readAt, writeAt time.Time // when the link is free again
	readMu, writeMu sync.Mutex
	// now and sleep are the link's clock: time.Now and time.Sleep but
	// in tests.
	now   func() time.Time
	sleep func(time.Duration)
}

func newPacedConn(c net.Conn, rate int64) net.Conn {
	if rate <= 0 {
		return c
	}
	return &pacedConn{Conn: c, rate: float64(rate), now: time.Now, sleep: time.Sleep}
}

// pace books n more bytes on the link whose next free time is at, and
// waits once the link is booked more than paceSlack ahead: small reads
// (net/rpc reads 4 KiB at a time) add up instead of each paying a
// timer's overshoot.
func (p *pacedConn) pace(at *time.Time, n int) {
	now := p.now()
	if at.Before(now) {
		*at = now
	}
	*at = at.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	if d := at.Sub(now); d > paceSlack {
		p.sleep(d)
	}
}

func (p *pacedConn) Read(b []byte) (int, error) {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	n, err := p.Conn.Read(b[:min(len(b), pacedChunk)])
	p.pace(&p.readAt, n)
	return n, err
}

func (p *pacedConn) Write(b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	written := 0
	for written < len(b) {
		chunk := b[written:min(len(b), written+pacedChunk)]
		p.pace(&p.writeAt, len(chunk))
		n, err := p.Conn.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// padding returns n bytes for a message to carry: a shared zero buffer,
// never written.
var padding = sync.OnceValue(func() []byte { return make([]byte, maxCommBytes) })

func pad(n int) []byte {
	if n <= 0 {
		return nil
	}
	return padding()[:min(n, maxCommBytes)]
}

// phase is one line of -phase-log.
type phase struct {
	Job   string `json:"job"`
	Rank  int    `json:"rank"`
	Step  int64  `json:"step"`
	Phase string `json:"phase"` // pull, compute or push
	Start int64  `json:"start_ns"`
	End   int64  `json:"end_ns"`
	// Waited is how long the phase waited for the coordinator's grant
	// before Start.
	Waited int64 `json:"waited_ns"`
}

// phaseLog appends phases to a file; a nil *phaseLog logs nothing.
type phaseLog struct {
	f   *os.File
	job string
	rnk int
}

func openPhaseLog(cfg *config) (*phaseLog, error) {
	if cfg.PhaseLog == "" {
		return nil, nil
	}
	f, err := os.OpenFile(cfg.PhaseLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("-phase-log: %w", err)
	}
	return &phaseLog{f: f, job: cfg.JobID, rnk: cfg.Rank}, nil
}

// add logs a phase that waited from asked, ran from start to end.
func (l *phaseLog) add(step int64, name string, asked, start, end time.Time) {
	if l == nil {
		return
	}
	line, _ := json.Marshal(phase{
		Job: l.job, Rank: l.rnk, Step: step, Phase: name,
		Start: start.UnixNano(), End: end.UnixNano(), Waited: int64(start.Sub(asked)),
	})
	_, _ = l.f.Write(append(line, '\n')) // a lost line loses a measurement, not training
}

func (l *phaseLog) close() {
	if l != nil {
		l.f.Close()
	}
}
