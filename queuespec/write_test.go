package queuespec

import (
	"path/filepath"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestFormat_RoundTrip writes the queues of every valid file and of the
// table, and parses them back to equal queues.
func TestFormat_RoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			queues, diags := ParseFile(file)
			must.Len(t, 0, diags, must.Sprint(diags.Error()))
			roundTrip(t, queues)
		})
	}

	cases := []struct {
		name   string
		queues []*structs.Queue
	}{
		{"weights", []*structs.Queue{
			{Name: "a", Namespaces: []string{"a"}, Weight: 0.1},
			{Name: "b", Namespaces: []string{"b"}, Weight: 1.0 / 3},
			{Name: "c", Namespaces: []string{"c"}, Weight: 1e-9},
			{Name: "d", Namespaces: []string{"d"}, Weight: 12345.678901234567},
		}},
		{"strings HCL would interpolate", []*structs.Queue{
			{Name: "x", Namespaces: []string{`ns-${a}`, `ns-%{b}`, `ns-\\*`}, Weight: 1, Cohort: "c.1_x-y"},
		}},
		{"every quota field", []*structs.Queue{{
			Name: "all", Namespaces: []string{"all-*"}, Weight: 3,
			Quota: structs.QueueQuota{
				GPU: []*structs.GPUQuota{
					{Type: "NVIDIA A100-SXM4-40GB", Nominal: 0, BorrowingLimit: new(0), LendingLimit: new(0)},
					{Type: `quo"te`, Nominal: structs.MaxQueueGPUs},
					{Type: "*", Nominal: 2, LendingLimit: new(2)},
				},
				CPU: 1, MemoryMB: structs.MaxQueueMemoryMB,
			},
		}}},
		{"default queue without namespaces", []*structs.Queue{{Name: structs.DefaultQueue, Weight: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range tc.queues {
				must.NoError(t, q.Validate())
			}
			roundTrip(t, tc.queues)
		})
	}
}

// roundTrip checks that Parse reads what Format writes of queues back to
// equal queues, and that Format writes those the same.
func roundTrip(t *testing.T, queues []*structs.Queue) {
	t.Helper()
	src := Format(queues)
	back, diags := Parse(src, "formatted.hcl")
	must.Len(t, 0, diags, must.Sprintf("%s\n%s", diags.Error(), src))
	must.Eq(t, queues, back, must.Sprint(string(src)))
	must.Eq(t, string(src), string(Format(back)))
}

// TestFormat_Text checks what Format writes: arguments left at their
// default are left out, and the quota reads as an operator would write it.
func TestFormat_Text(t *testing.T) {
	queues := []*structs.Queue{
		{Name: "nlp", Namespaces: []string{"nlp-*"}, Weight: 2, Cohort: "research", CreateIndex: 7, ModifyIndex: 9,
			Quota: structs.QueueQuota{
				GPU: []*structs.GPUQuota{{Type: "A100", Nominal: 16, LendingLimit: new(8)}, {Type: "*", Nominal: 4}},
				CPU: 256000,
			}},
		nil,
		{Name: "batch", Namespaces: []string{"batch", "etl"}, Weight: 1},
	}
	must.Eq(t, `queue "nlp" {
  namespaces = ["nlp-*"]
  weight     = 2
  cohort     = "research"

  quota {
    gpu "A100" {
      nominal       = 16
      lending_limit = 8
    }
    gpu "*" {
      nominal = 4
    }
    cpu = 256000
  }
}

queue "batch" {
  namespaces = ["batch", "etl"]
}
`, string(Format(queues)))
	must.Eq(t, "", string(Format(nil)))
}
