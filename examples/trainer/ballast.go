package main

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ballast is memory a worker allocates and holds, so that its resident
// set grows past its memory limit (-ballast-mb): a test of OOM handling.
type ballast struct {
	mu     sync.Mutex
	chunks [][]byte
}

// pageSize is the step at which the ballast touches its pages, so that
// every page becomes resident.
const pageSize = 4096

// growBallast starts allocating mb MB, 1 MB at a time at rate MB/s,
// touching every page, until it holds all of it or ctx ends. The memory
// is held for the life of the process.
func growBallast(ctx context.Context, log hclog.Logger, mb, rate int) *ballast {
	b := &ballast{}
	log.Info("growing ballast", "mb", mb, "mb_per_s", rate)
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; i < mb; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			chunk := make([]byte, 1<<20)
			for p := 0; p < len(chunk); p += pageSize {
				chunk[p] = 1
			}
			b.mu.Lock()
			b.chunks = append(b.chunks, chunk)
			b.mu.Unlock()
		}
		log.Info("ballast allocated", "mb", mb)
	}()
	return b
}

// size returns how many MB the ballast holds.
func (b *ballast) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.chunks)
}
