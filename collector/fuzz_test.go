package collector

import (
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/hashicorp/go-hclog"
)

// FuzzParseLine decodes a line of a followed file, one sample or a report
// {"samples": [...]}, and reports its samples to a collector, as the
// tailer does (no listener is started). For any line: a clear error, or
// samples the collector keeps, all of them valid.
//
//	go test ./collector -run '^$' -fuzz '^FuzzParseLine$' -fuzztime 1m
func FuzzParseLine(f *testing.F) {
	c, err := New(Config{Logger: hclog.NewNullLogger()})
	if err != nil {
		f.Fatal(err)
	}
	sample := `{"job_id":"j","step":3,"loss":0.5,"step_time_s":0.2,"num_workers":2}`
	for _, line := range []string{
		sample,
		`{"samples":[` + sample + `,` + sample + `]}`, // duplicate samples
		`{"job_id":"j","step":5,"samples":32}`,
		`{"Samples":[],"job_id":"j"}`, `{"samples":[]}`, `{"samples":null}`, `{"samples":"x"}`,
		`[{"job_id":"j"}]`, `{"job_id":"j"} 1`, `{"job_id":"j","step":"three"}`, `null`, ``, `{`,
		`{"job_id":"j","loss":1e400}`, `{"job_id":"j","epoch":-1e309}`, `{"job_id":"j","time":9223372036854775807}`,
		`{"job_id":"` + strings.Repeat("j", 1<<12) + `"}`,
		`{"namespace":"` + strings.Repeat("n", 300) + `","job_id":"j"}`,
		`{"samples":[` + strings.Repeat(sample+",", 2_000) + sample + `]}`,
		`{"SAMPLES":[` + sample + `],"samples":3}`,
	} {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		samples, err := parseLine(line)
		testutil.ClearError(t, "parse a line", err)
		if err != nil {
			return
		}
		if _, err := c.Report(samples); err != nil {
			testutil.ClearError(t, "report a line's samples", err)
			return
		}
		for i := range samples {
			if err := samples[i].Validate(); err != nil {
				t.Fatalf("kept samples[%d], which is invalid: %v", i, err)
			}
		}
	})
}
