package jobspec

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// bombJob returns a valid jobspec but for meta's value expr, with locals.
func bombJob(locals, expr string) string {
	return "locals {\n" + locals + "\n}\njob \"bomb\" {\n  meta {\n    a = " + expr + "\n  }\n" + `  training {
    global_batch_size = 32
    steps_per_epoch   = 100
  }
  elastic {
    workers {
      max = 4
    }
  }
  worker {
    driver = "exec"
  }
}
`
}

// maxBombCalls bounds the metered calls (budget.calls) that rejecting any
// jobspec of TestParse_Limits may take: the work of its evaluation, which
// the budget's cost stops counting once spent (the nested for expressions
// take about a million, one per iteration of the middle loop).
const maxBombCalls = 4 << 20

// maxBombMallocs bounds the allocations that rejecting any jobspec of
// TestParse_Limits may take: a count of the evaluator's work that the
// metered calls miss, such as the iterations of a for expression that calls
// no function (the nested for expressions take about 8.3 million).
const maxBombMallocs = 16 << 20

// workClock returns a clock for a budget that advances by one tick per
// metered call of *b, so that MaxEvalTime is MaxEvalTime/tick calls
// whatever the machine's load.
func workClock(b **budget, tick time.Duration) func() time.Time {
	start := time.Unix(0, 0)
	return func() time.Time {
		if *b == nil {
			return start
		}
		return start.Add(time.Duration((*b).calls) * tick)
	}
}

// TestParse_Limits feeds jobspecs that ask for unbounded work. Each must be
// rejected with a diagnostic that names where, in bounded work (metered
// calls and allocations) and little memory. The work is counted, not timed: the budget runs on a clock that
// ticks once per metered call, MaxEvalTime/maxBombCalls a tick, so that a
// bound that stopped holding shows as the deadline's diagnostic after
// maxBombCalls calls, and never as a slow machine.
func TestParse_Limits(t *testing.T) {
	const n = 100_000
	cases := []struct {
		name, locals, expr string
		want               string
	}{
		{"nested parentheses", "", strings.Repeat("(", n) + `"x"` + strings.Repeat(")", n), "Nesting too deep"},
		{"nested lists", "", strings.Repeat("[", n) + strings.Repeat("]", n), "Nesting too deep"},
		{"nested interpolations", "", strings.Repeat(`"${`, n/3) + "1" + strings.Repeat(`}"`, n/3), "Nesting too deep"},
		{"nesting after a heredoc with a quote", `h = <<EOF
"
EOF`, strings.Repeat("(", n) + `"x"` + strings.Repeat(")", n), "Nesting too deep"},
		{"nesting in a heredoc", "", "<<EOF\n${" + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000) + "}\nEOF\n", "Nesting too deep"},
		{"unary chain", "", strings.Repeat("!", n) + "true", "Too many operators"},
		{"binary chain", "", "1" + strings.Repeat("+1", n), "Too many operators"},
		{"conditional chain", "", strings.Repeat("true ? 1 : ", 20_000) + "2", "Too many operators"},
		{"huge source", "", `"` + strings.Repeat("x", 1<<20) + `"`, "Jobspec too large"},
		{"setproduct of three", "", "length(setproduct(range(1000), range(1000), range(1000)))", "setproduct would build 1000000000 elements"},
		{"setproduct of two", "", "length(setproduct(range(1000), range(1000)))", "setproduct would build 1000000 elements"},
		{"range", "", "length(range(1000000000))", "range would build 1000000000 elements"},
		{"range with step", "", "length(range(0, 1e12, 3))", "range would build"},
		{"format width", "", `format("%999999999d", 1)`, "width or precision"},
		{"format precision", "", `format("%.999999999f", 1)`, "width or precision"},
		{"formatlist width", "", `join(",", formatlist("%99999999s", ["a"]))`, "width or precision"},
		{"indent", "", `indent(1000000000, "a\nb")`, "indent would build"},
		{"replace", `s = join("", [for i in range(1000): "abcd"])`, `replace(local.s, "", local.s)`, "replace could build"},
		{"nested for expressions", `l = range(1000)`, `length([for a in local.l: [for b in local.l: [for c in local.l: 1]]])`, "MiB of values in all"},
		{"doubling templates", "a0 = \"0123456789abcdef\"\n" + doubling(40), "length(local.a40)", "MiB of values in all"},
		{"template of many references", `s = join("", [for i in range(1000): "abcdefgh"])`, `"` + strings.Repeat("${local.s}", 10_000) + `"`, "MiB of values in all"},
		{"jsondecode deep", "", `jsondecode("` + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + `")`, "nests more than"},
		{"flatten of many", `l = [for i in range(1000): range(1000)]`, "length(flatten(local.l))", "MiB of values in all"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := bombJob(tc.locals, tc.expr)
			var b *budget
			defer func(orig func() *budget) { newBudget = orig }(newBudget)
			newBudget = func() *budget {
				b = newBudgetAt(workClock(&b, MaxEvalTime/maxBombCalls))
				return b
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			job, diags := Parse(&Config{Filename: "bomb.hcl", Src: []byte(src)})
			runtime.ReadMemStats(&after)
			alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
			mallocs := after.Mallocs - before.Mallocs
			var calls int64
			if b != nil { // nil: rejected before evaluation
				calls = b.calls
			}
			t.Logf("rejected in %d metered calls, %d allocations of %d MB: %s", calls, mallocs, alloc, diags.Error())
			must.Nil(t, job)
			must.True(t, diags.HasErrors())
			must.StrContains(t, diags.Error(), tc.want)
			must.StrContains(t, diags.Error(), "bomb.hcl:")
			must.LessEq(t, maxBombCalls, calls)
			must.LessEq(t, maxBombMallocs, mallocs)
			must.Less(t, uint64(512), alloc)
		})
	}
}

// TestBudget_Deadline: a budget whose clock passes MaxEvalTime fails the
// next charge with the deadline's diagnostic, and every charge after it
// quietly. The clock ticks one second a metered call.
func TestBudget_Deadline(t *testing.T) {
	var b *budget
	b = newBudgetAt(workClock(&b, time.Second))
	var err error
	for err == nil && !b.exhausted() {
		err = b.charge(1)
	}
	must.ErrorContains(t, err, "evaluating the jobspec takes more than 2s")
	must.Eq(t, int64(MaxEvalTime/time.Second)+1, b.calls, must.Sprint("the first call past the deadline fails"))
	must.True(t, b.exhausted())
	must.ErrorIs(t, b.charge(1), errSpent)
}

func doubling(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("a" + itoa(i) + " = \"${local.a" + itoa(i-1) + "}${local.a" + itoa(i-1) + "}\"\n")
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestParse_WithinLimits checks that the bounds leave room for what jobspecs
// do: ranges, products and for expressions of modest size.
func TestParse_WithinLimits(t *testing.T) {
	src := bombJob(`gpus = [for i in range(8): "gpu${i}"]
pairs = setproduct(range(50), range(50))
nested = [for a in range(100): [for b in range(100): a * b]]`,
		`format("%s-%d-%d-%05d", join(",", local.gpus), length(local.pairs), length(flatten(local.nested)), 7)`)
	job, diags := Parse(&Config{Filename: "ok.hcl", Src: []byte(src)})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, "gpu0,gpu1,gpu2,gpu3,gpu4,gpu5,gpu6,gpu7-2500-10000-00007", job.Meta["a"])
}

func TestNestingDepth(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		depth int
	}{
		{"flat", `a = 1`, 0},
		{"brackets", `a = [{b = (1)}]`, 3},
		{"string brackets do not count", `a = "((((("`, 0},
		{"interpolation counts", `a = "${[1]}"`, 2},
		{"escaped quote", `a = "\"(((" + (1)`, 1},
		{"comments skip", "# ((((\n// [[[[\n/* {{{{ */ a = (1)", 1},
		{"heredoc", "a = <<EOF\n((\"\nEOF\nb = (1)", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, _ := nestingDepth([]byte(tc.src))
			must.Eq(t, tc.depth, d)
		})
	}
}
