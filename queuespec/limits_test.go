package queuespec

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// queueWith returns a queue file of one valid queue but for the weight,
// given as expr, and more, appended to the queue's body.
func queueWith(expr, more string) string {
	return "queue \"bomb\" {\n  namespaces = [\"bomb\"]\n  weight = " + expr + "\n" + more + "}\n"
}

// manyQueues returns n valid queue blocks.
func manyQueues(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("queue \"q" + itoa(i) + "\" {\n  namespaces = [\"ns-" + itoa(i) + "\"]\n}\n")
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// maxBombMB bounds the memory that refusing any file of TestParse_Limits
// may allocate, in MB: a few times its source's size.
const maxBombMB = 16

// TestParse_Limits feeds queue files that ask for unbounded work or
// memory. Each must be refused with a diagnostic that names the file and
// says why, allocating little: the work is counted in bytes, not timed.
func TestParse_Limits(t *testing.T) {
	const n = 100_000
	many := func(format string, k int) string {
		var b strings.Builder
		for i := range k {
			b.WriteString(strings.ReplaceAll(format, "%d", itoa(i)))
		}
		return b.String()
	}
	cases := []struct {
		name, src, want string
	}{
		{"oversized", manyQueues(9000), "bomb.hcl:1:1: Queue file too large: bomb.hcl is 402780 bytes; a queue file may be at most 262144."},
		{"nested parentheses", queueWith(strings.Repeat("(", n)+"1"+strings.Repeat(")", n), ""), "Nesting too deep"},
		{"nested lists", queueWith(strings.Repeat("[", n)+strings.Repeat("]", n), ""), "Nesting too deep"},
		{"nested interpolations", queueWith(strings.Repeat(`"${`, n/3)+"1"+strings.Repeat(`}"`, n/3), ""), "Nesting too deep"},
		{"nesting in a heredoc", queueWith("<<EOF\n${"+strings.Repeat("(", 1000)+"1"+strings.Repeat(")", 1000)+"}\nEOF\n", ""), "Nesting too deep"},
		{"binary chain", queueWith("1"+strings.Repeat("+1", n), ""), "Too many operators"},
		{"unary chain", queueWith(strings.Repeat("-", n)+"1", ""), "Too many operators"},
		{"deep expression", queueWith(strings.Repeat("-", 1000)+"1", ""), "bomb.hcl:3:262: Expression too deep"},
		{"nested for expressions", queueWith("length([for a in [1,2,3]: [for b in [1,2,3]: b]])", ""), "For expression not allowed"},
		{"template for", queueWith(`"%{for a in [1]}%{for b in [1]}x%{endfor}%{endfor}"`, ""), "For expression not allowed"},
		{"too many queues", manyQueues(MaxQueues + 1), "bomb.hcl:769:1: Too many queues"},
		{"too many namespaces", "queue \"bomb\" {\n  namespaces = [" + many(`"n%d",`, MaxNamespaces+1) + "]\n}\n", "namespaces are more than the 256 a queue may have"},
		{"too many gpus", queueWith("1", "quota {\n"+many("gpu \"g%d\" { nominal = 1 }\n", MaxGPUQuotas+1)+"}\n"), "A quota may have at most 64 gpu blocks"},
		{"huge number", queueWith("1e99999999999", ""), "bomb.hcl:3:"},
		{"huge product", queueWith("1e999999999 * 1e999999999 * 1e999999999", ""), "bomb.hcl:3:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			queues, diags := Parse([]byte(tc.src), "bomb.hcl")
			runtime.ReadMemStats(&after)
			alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
			t.Logf("refused with %d MB allocated: %s", alloc, render(diags))
			must.Nil(t, queues)
			must.True(t, diags.HasErrors())
			must.StrContains(t, render(diags), tc.want)
			must.StrContains(t, render(diags), "bomb.hcl:")
			must.Less(t, uint64(maxBombMB), alloc)
		})
	}
}

// TestParse_WithinLimits checks that the bounds leave room for what queue
// files do: every queue a cluster may have, each with many namespaces and
// GPU types.
func TestParse_WithinLimits(t *testing.T) {
	queues, diags := Parse([]byte(manyQueues(MaxQueues)), "many.hcl")
	must.Len(t, 0, diags, must.Sprint(diags.Error()))
	must.SliceLen(t, MaxQueues, queues)

	var ns, gpus strings.Builder
	for i := range MaxNamespaces {
		ns.WriteString(`"n` + itoa(i) + `", `)
	}
	for i := range MaxGPUQuotas {
		gpus.WriteString("gpu \"g" + itoa(i) + "x\" { nominal = 1 }\n") // no type contains another
	}
	src := "queue \"wide\" {\n  namespaces = [" + ns.String() + "]\n  quota {\n" + gpus.String() + "}\n}\n"
	queues, diags = Parse([]byte(src), "wide.hcl")
	must.Len(t, 0, diags, must.Sprint(diags.Error()))
	must.SliceLen(t, MaxNamespaces, queues[0].Namespaces)
	must.SliceLen(t, MaxGPUQuotas, queues[0].Quota.GPU)
}

// TestParseFile_Oversized checks that a file far over MaxSourceBytes (a
// sparse gigabyte) is refused without being read whole.
func TestParseFile_Oversized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.hcl")
	f, err := os.Create(path)
	must.NoError(t, err)
	must.NoError(t, f.Truncate(1<<30))
	must.NoError(t, f.Close())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	queues, diags := ParseFile(path)
	runtime.ReadMemStats(&after)
	must.Nil(t, queues)
	must.Eq(t, "huge.hcl:1:1: Queue file too large: "+path+" is 262145 bytes; a queue file may be at most 262144.\n", render(diags))
	must.Less(t, uint64(4<<20), after.TotalAlloc-before.TotalAlloc)
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
		{"string closers do not count", `a = [[ "]]]]" [[`, 4},
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
