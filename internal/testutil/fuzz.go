package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AddFiles hands every file the glob patterns match to add, with its
// name and contents: a fuzz target's seeds from the repository's examples
// and test data. A pattern that matches nothing fails f: the seeds moved.
func AddFiles(f *testing.F, add func(name string, src []byte), patterns ...string) {
	f.Helper()
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		if len(files) == 0 {
			f.Fatalf("no seed file matches %s", pattern)
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			add(file, src)
		}
	}
}

// ClearError fails t when err is an error whose message is empty or only
// white space: a fuzz target's input may be refused, but the caller must be
// told why. A nil err passes.
func ClearError(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil && strings.TrimSpace(err.Error()) == "" {
		t.Fatalf("%s: an error with an empty message (%T)", what, err)
	}
}

// DeepConfigJobJSON returns a job register request (POST /v1/jobs) whose
// Worker.Config nests depth objects {"x":{"a":{"a":...1...}}}: deeper than
// the msgpack decoder's limit (1024) at depth 1,100, so that a server that
// accepts it writes a Raft entry it cannot apply.
func DeepConfigJobJSON(depth int) []byte {
	var b strings.Builder
	b.WriteString(`{"Job":{"ID":"deep","Training":{"GlobalBatchSize":8,"StepsPerEpoch":1000},"Elastic":{"Workers":{"Min":1,"Max":1}},"Worker":{"Driver":"docker","Config":`)
	b.WriteString(`{"x":`)
	b.WriteString(strings.Repeat(`{"a":`, depth-1))
	b.WriteString("1")
	b.WriteString(strings.Repeat("}", depth))
	b.WriteString(`,"Resources":{"CPU":20,"MemoryMB":32}}}}`)
	return []byte(b.String())
}

// Batch sizes near the top of int64 for a sync-mode job whose global batch
// is not divisible by its workers' maximum: MaxInt64-24 is prime, so a
// search for a divisor of it below MaxInt64-25 counts down 2^63 values.
const (
	HugeGlobalBatchSize = 9223372036854775783
	HugeMaxWorkers      = 9223372036854775782
)

// HugeBatchJobJSON returns a job register request for a sync-mode job with
// HugeGlobalBatchSize and HugeMaxWorkers.
func HugeBatchJobJSON() []byte {
	return []byte(`{"Job":{"ID":"huge","Training":{"Mode":"sync","GlobalBatchSize":9223372036854775783,"StepsPerEpoch":1000},` +
		`"Elastic":{"Workers":{"Min":1,"Max":9223372036854775782}},"Worker":{"Driver":"docker","Resources":{"CPU":20,"MemoryMB":32}}}}`)
}

// HugeBatchJobHCL returns the same job as HugeBatchJobJSON as a jobspec.
func HugeBatchJobHCL() []byte {
	return []byte(`job "huge" {
  training {
    mode              = "sync"
    global_batch_size = 9223372036854775783
    steps_per_epoch   = 1000
  }
  elastic {
    workers {
      min = 1
      max = 9223372036854775782
    }
  }
  worker {
    driver = "docker"
    resources {
      cpu    = 20
      memory = 32
    }
  }
}
`)
}

// DeepMsgpack returns a msgpack value that nests depth maps {"a": {"a":
// ... 1}}: deeper than the decoder's limit (1024) at depth 1,100.
func DeepMsgpack(depth int) []byte {
	return append(bytes.Repeat([]byte{0x81, 0xa1, 'a'}, depth), 0x01)
}
