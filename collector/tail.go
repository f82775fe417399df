package collector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// maxLineBytes bounds a line of the followed file, as MaxBodyBytes bounds
// a report; a longer line is bad.
const maxLineBytes = MaxBodyBytes

// tailer follows a file of JSON lines as tail -F does, and reports the
// samples of each line to the collector. A line counts once its newline is
// written, or once the file is replaced (its last line may have none).
// Lines that are not samples are counted and logged with their number,
// never fatal.
type tailer struct {
	path     string
	interval time.Duration
	c        *Collector
	log      hclog.Logger
}

// run follows the file until ctx ends, opening it again whenever it is
// replaced, and waiting for it while it does not exist.
func (t *tailer) run(ctx context.Context) {
	waiting := false
	for {
		f, err := os.Open(t.path)
		if err != nil {
			if !waiting {
				t.log.Warn("cannot open the file; waiting for it", "error", err)
				waiting = true
			}
			if !sleep(ctx, t.interval) {
				return
			}
			t.c.tailChecks.Add(1)
			continue
		}
		waiting = false
		t.log.Info("following file")
		done := t.follow(ctx, f)
		f.Close()
		if done {
			return
		}
	}
}

// follow reads f from its start and then as it grows, until ctx ends (it
// returns true) or the path names another file or none (false), once the
// rest of f is read.
func (t *tailer) follow(ctx context.Context, f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		t.log.Warn("cannot stat the file", "error", err)
		return !sleep(ctx, t.interval)
	}
	var (
		buf = make([]byte, 64<<10)
		// pending is the start of a line whose newline is not read yet.
		pending []byte
		// skipping is set while the rest of a too long line is skipped.
		skipping bool
		lineNo   int
		offset   int64
		replaced bool
	)
	for {
		n, err := f.Read(buf)
		offset += int64(n)
		for data := buf[:n]; len(data) > 0; {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if !skipping {
					pending = append(pending, data...)
				}
				if len(pending) > maxLineBytes {
					lineNo++
					t.bad(lineNo, fmt.Errorf("line is longer than %d bytes", maxLineBytes))
					pending, skipping = nil, true
				}
				break
			}
			line := data[:i]
			data = data[i+1:]
			if skipping {
				skipping = false
				continue
			}
			lineNo++
			if len(pending) > 0 {
				line = append(pending, line...)
				pending = pending[:0]
			}
			t.line(lineNo, line)
		}
		switch {
		case n > 0:
			continue
		case err != nil && !errors.Is(err, io.EOF):
			t.log.Warn("cannot read the file; opening it again", "error", err)
			return !sleep(ctx, t.interval)
		case replaced:
			if len(pending) > 0 && !skipping {
				t.line(lineNo+1, pending)
			}
			t.log.Info("file was replaced or removed; following the path")
			return false
		}
		// At the end of the file: wait for more.
		if !sleep(ctx, t.interval) {
			return true
		}
		t.c.tailChecks.Add(1)
		now, err := os.Stat(t.path)
		switch {
		case err != nil || !os.SameFile(fi, now):
			// Read what was written before the file was replaced.
			replaced = true
		case now.Size() < offset:
			t.log.Info("file was truncated; reading it from its start")
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				t.log.Warn("cannot rewind the file; opening it again", "error", err)
				return false
			}
			pending, skipping, lineNo, offset = nil, false, 0, 0
		}
	}
}

// line reports the samples of one line: a sample, or {"samples": [...]}.
// Blank lines are skipped.
func (t *tailer) line(n int, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	samples, err := parseLine(line)
	if err == nil {
		_, err = t.c.Report(samples)
	}
	if err != nil {
		t.bad(n, err)
	}
}

func (t *tailer) bad(n int, err error) {
	t.c.badLines.Add(1)
	t.log.Warn("skipping a bad line", "line", n, "error", err)
}

// parseLine decodes a line: an object whose "samples" is an array is a
// report, any other object one sample. Unknown keys are errors, as in reports.
func parseLine(line []byte) ([]structs.Sample, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return nil, fmt.Errorf("line is not a JSON object: %w", err)
	}
	// A sample has a key "samples" too: the number of training samples
	// of its step. A report's is an array. Keys match in any letter case,
	// as encoding/json matches them.
	var samples json.RawMessage
	for k, v := range keys {
		if strings.EqualFold(k, "samples") {
			samples = v
		}
	}
	if raw := bytes.TrimSpace(samples); len(raw) > 0 && raw[0] == '[' {
		var req structs.ReportRequest
		if err := json.Unmarshal(line, &req); err != nil { // strict: ReportRequest.UnmarshalJSON
			return nil, fmt.Errorf("line is not a report {\"Samples\": [...]}: %w", err)
		}
		return req.Samples, nil
	}
	s, err := structs.DecodeSample(line)
	if err != nil {
		return nil, fmt.Errorf("line is not a sample: %w", err)
	}
	return []structs.Sample{s}, nil
}

// sleep waits for d, and returns false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
