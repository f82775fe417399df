package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// File-based rendezvous, as PyTorch's FileStore: parameter server r of
// generation g writes its address to
// $CARAVAN_CHECKPOINT_DIR/rendezvous/<g>/ps-<r> (atomically), and workers
// of generation g wait until all the files exist. The checkpoint directory
// is shared by all tasks of a job, and the generation changes whenever
// Caravan restarts the job under a new placement, so files of an earlier
// placement are never read.

// psAddress is the content of a rendezvous file. Incarnation is random per
// process start: a worker that sees it change knows the server restarted
// and lost its state.
type psAddress struct {
	Addr        string `json:"addr"`
	Incarnation string `json:"incarnation"`
	PID         int    `json:"pid"`
}

func rendezvousPath(checkpointDir, generation string, rank int) string {
	return filepath.Join(checkpointDir, rendezvousDir, generation, fmt.Sprintf("ps-%d", rank))
}

func publishPS(checkpointDir, generation string, rank int, a psAddress) error {
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode address: %w", err)
	}
	return writeFileAtomic(rendezvousPath(checkpointDir, generation, rank), data)
}

func readPS(checkpointDir, generation string, rank int) (psAddress, error) {
	path := rendezvousPath(checkpointDir, generation, rank)
	data, err := os.ReadFile(path)
	if err != nil {
		return psAddress{}, err
	}
	var a psAddress
	if err := json.Unmarshal(data, &a); err != nil {
		return psAddress{}, fmt.Errorf("decode %s: %w", path, err)
	}
	if a.Addr == "" {
		return psAddress{}, fmt.Errorf("%s has no address", path)
	}
	return a, nil
}

// waitForPS polls until all numPS parameter servers of the generation
// have published their addresses, or timeout passes.
func waitForPS(ctx context.Context, checkpointDir, generation string, numPS int, timeout time.Duration) ([]psAddress, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	addrs := make([]psAddress, numPS)
	for {
		missing := 0
		var lastErr error
		for r := range numPS {
			if addrs[r].Addr != "" {
				continue
			}
			a, err := readPS(checkpointDir, generation, r)
			if err != nil {
				missing++
				lastErr = err
				continue
			}
			addrs[r] = a
		}
		if missing == 0 {
			return addrs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d parameter servers did not publish their address in %s within %v: %w (last: %v)",
				missing, numPS, filepath.Dir(rendezvousPath(checkpointDir, generation, 0)), timeout, ctx.Err(), lastErr)
		case <-ticker.C:
		}
	}
}

// removeOldRendezvous deletes the rendezvous directories of other
// generations. The chief calls it once its generation has met: by then
// the tasks of earlier generations are gone.
func removeOldRendezvous(checkpointDir, generation string) error {
	root := filepath.Join(checkpointDir, rendezvousDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != generation {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// donePath is the marker a parameter server writes when the chief says
// training is done, so that a worker that finds the servers gone knows
// they finished rather than failed.
func donePath(checkpointDir, generation string) string {
	return filepath.Join(checkpointDir, rendezvousDir, generation, "done")
}

// markDone writes the done marker of the generation.
func markDone(checkpointDir, generation string) error {
	return writeFileAtomic(donePath(checkpointDir, generation), nil)
}

// isDone reports whether the generation's training is done.
func isDone(checkpointDir, generation string) bool {
	_, err := os.Stat(donePath(checkpointDir, generation))
	return err == nil
}
