package collector

import (
	"sync"

	"github.com/caravan-sched/caravan/structs"
)

// window holds the newest samples, each numbered by a sequence number from
// 1 in the order it was kept, and wakes the readers that wait for newer
// ones. It is safe for concurrent use.
type window struct {
	size int

	mu sync.Mutex
	// buf is a ring: the sample numbered s lives at buf[(s-1)%size]. It
	// grows to size, then the newest sample overwrites the oldest. The
	// samples held are numbered last-len(buf)+1 to last, without gaps.
	buf     []structs.Sample
	last    uint64
	dropped uint64
	// changed is closed, and replaced, when samples are added.
	changed chan struct{}
}

func newWindow(size int) *window {
	return &window{size: size, changed: make(chan struct{})}
}

// add numbers and keeps samples, dropping the oldest held beyond the
// window's size, and returns the sequence number of the last.
func (w *window) add(samples []structs.Sample) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if extra := len(samples) - w.size; extra > 0 {
		// These would be overwritten by the same batch.
		w.last += uint64(extra)
		w.dropped += uint64(extra)
		samples = samples[extra:]
	}
	for _, s := range samples {
		w.last++
		if len(w.buf) < w.size {
			if len(w.buf) == cap(w.buf) {
				// Grow as append would, but never beyond size.
				grown := make([]structs.Sample, len(w.buf), min(max(2*cap(w.buf), 64), w.size))
				copy(grown, w.buf)
				w.buf = grown
			}
			w.buf = append(w.buf, s)
			continue
		}
		w.buf[(w.last-1)%uint64(w.size)] = s
		w.dropped++
	}
	close(w.changed)
	w.changed = make(chan struct{})
	return w.last
}

// Page is the answer of GET /v1/samples: the samples kept after a sequence
// number, oldest first. Samples are numbered without gaps, so Samples[i]
// has the sequence number Next-len(Samples)+1+i.
type Page struct {
	Samples []structs.Sample
	// Next is the sequence number of the last sample in Samples, or the
	// since asked for when there is none: the since of the next read.
	Next uint64
	// Dropped counts the samples the window dropped since the collector
	// started, read or not.
	Dropped uint64
	// Truncated says that samples after since were dropped before this
	// read: Samples starts with the oldest held.
	Truncated bool `json:",omitempty"`
	// Reset says that since was ahead of every sample the collector kept:
	// it was read from another instance (the collector restarted), and
	// Samples starts with the oldest held.
	Reset bool `json:",omitempty"`
	// More says that limit cut the page: more samples are held after Next.
	More bool `json:",omitempty"`
	// Instance identifies the collector process (Collector.Instance).
	Instance string
}

// read returns up to limit samples numbered after since, and a channel
// closed when samples are added after the call.
func (w *window) read(since uint64, limit int) (*Page, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := &Page{Dropped: w.dropped}
	if since > w.last {
		p.Reset = true
		since = 0
	}
	first := w.last - uint64(len(w.buf)) + 1
	p.Truncated = since+1 < first
	start := max(since+1, first)
	n := uint64(0)
	if start <= w.last {
		n = min(w.last-start+1, uint64(limit))
	}
	p.Samples = make([]structs.Sample, n)
	for i := range n {
		p.Samples[i] = w.buf[(start+i-1)%uint64(w.size)]
	}
	p.Next = since
	if n > 0 {
		p.Next = start + n - 1
	}
	p.More = p.Next < w.last
	return p, w.changed
}

// stats returns how many samples are held, the last sequence number and
// how many were dropped.
func (w *window) stats() (held int, last, dropped uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf), w.last, w.dropped
}
