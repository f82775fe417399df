package collector

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func jsonLine(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must.NoError(t, err)
	return string(b) + "\n"
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	must.NoError(t, err)
	_, err = f.WriteString(text)
	must.NoError(t, err)
	must.NoError(t, f.Close())
}

// waitStats waits until the collector has read held samples and counted
// bad lines.
func waitStats(t *testing.T, c *Collector, held int, bad uint64) {
	t.Helper()
	agent.WaitFor(t, 10*time.Second, fmt.Sprintf("%d samples and %d bad lines", held, bad), func() error {
		st := c.Stats()
		if st.Held != held || st.BadLines != bad {
			return fmt.Errorf("%d samples and %d bad lines", st.Held, st.BadLines)
		}
		return nil
	})
}

func heldSteps(c *Collector) []int64 {
	p, _ := c.win.read(0, DefaultWindow)
	return steps(p)
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	negative := sample(4)
	negative.Loss = -2
	// Written before the collector starts: read from the start.
	appendFile(t, path, jsonLine(t, sample(1))+
		"\n"+ // blank lines are skipped
		jsonLine(t, structs.ReportRequest{Samples: []structs.Sample{sample(2), sample(3)}})+
		"{not json\n"+ // line 4
		jsonLine(t, negative)) // line 5

	c := TestCollector(t, Config{File: path, TailInterval: 10 * time.Millisecond})
	waitStats(t, c, 3, 2)
	must.Eq(t, []int64{1, 2, 3}, heldSteps(c))

	t.Run("follows appends", func(t *testing.T) {
		line := jsonLine(t, sample(5))
		// A line counts once its newline is written.
		appendFile(t, path, line[:10])
		waitChecks(t, c, 3) // several looks see the partial line
		must.Eq(t, 3, c.Stats().Held)
		future := sample(6)
		future.Time = time.Now().Add(time.Hour).UnixNano()
		appendFile(t, path, line[10:]+jsonLine(t, map[string]any{"job_id": "j1", "step": 6, "bogus": 1})+jsonLine(t, future)+jsonLine(t, sample(7)))
		waitStats(t, c, 5, 4) // a sample from the future is a bad line
		must.Eq(t, []int64{1, 2, 3, 5, 7}, heldSteps(c))
	})
	t.Run("a too long line is bad", func(t *testing.T) {
		appendFile(t, path, `{"job_id": "`+strings.Repeat("x", maxLineBytes+10)+"\"}\n"+jsonLine(t, sample(8)))
		waitStats(t, c, 6, 5)
	})
	t.Run("follows a truncated file from its start", func(t *testing.T) {
		must.NoError(t, os.WriteFile(path, []byte(jsonLine(t, sample(20))), 0o644))
		waitStats(t, c, 7, 5)
	})
	t.Run("follows a replaced file", func(t *testing.T) {
		// The old file's last line has no newline yet when it is replaced.
		appendFile(t, path, strings.TrimSuffix(jsonLine(t, sample(21)), "\n"))
		next := path + ".new"
		must.NoError(t, os.WriteFile(next, []byte(jsonLine(t, sample(30))), 0o644))
		must.NoError(t, os.Rename(next, path))
		waitStats(t, c, 9, 5)
		must.Eq(t, []int64{1, 2, 3, 5, 7, 8, 20, 21, 30}, heldSteps(c))
	})
	t.Run("waits for a removed file", func(t *testing.T) {
		must.NoError(t, os.Remove(path))
		waitChecks(t, c, 3) // the tailer notices
		appendFile(t, path, jsonLine(t, sample(40)))
		waitStats(t, c, 10, 5)
	})
}

func TestTail_FileCreatedLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.jsonl")
	c := TestCollector(t, Config{File: path, TailInterval: 10 * time.Millisecond})
	waitChecks(t, c, 2) // it waits for the file
	appendFile(t, path, jsonLine(t, sample(1)))
	waitStats(t, c, 1, 0)
}

// waitChecks waits until the tailer has looked at the file n more times.
func waitChecks(t *testing.T, c *Collector, n uint64) {
	t.Helper()
	from := c.Stats().TailChecks
	agent.WaitFor(t, 10*time.Second, fmt.Sprintf("%d looks at the file", n), func() error {
		if got := c.Stats().TailChecks - from; got < n {
			return fmt.Errorf("%d looks so far", got)
		}
		return nil
	})
}

func TestParseLine(t *testing.T) {
	cases := []struct {
		name, line string
		steps      []int64
		err        string
	}{
		{"sample", `{"job_id": "j", "step": 3}`, []int64{3}, ""},
		{"report", `{"samples": [{"job_id": "j", "step": 3}, {"job_id": "j", "step": 4}]}`, []int64{3, 4}, ""},
		{"array", `[{"job_id": "j"}]`, nil, "not a JSON object"},
		{"trailing", `{"job_id": "j"} 1`, nil, "not a JSON object"},
		{"report with extra key", `{"samples": [], "job_id": "j"}`, nil, `unknown field "job_id"`},
		{"sample with its samples count", `{"job_id": "j", "step": 5, "samples": 32}`, []int64{5}, ""},
		{"bad type", `{"job_id": "j", "step": "three"}`, nil, "not a sample"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLine([]byte(tc.line))
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			var s []int64
			for _, smp := range got {
				s = append(s, smp.Step)
			}
			must.Eq(t, tc.steps, s)
		})
	}
}
