// Package hcldiag turns validation errors into HCL diagnostics for the
// parsers of Caravan's HCL files (jobspec, queuespec): both record the
// source range of every path they decode ("a.b[0].c") and which paths
// failed to decode, and point each structs.FieldError at its path's
// range, or the nearest enclosing one's.
package hcldiag

import (
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Failed reports whether path or a path enclosing it is in failed.
func Failed(failed map[string]bool, path string) bool {
	for p := path; ; p = Parent(p) {
		if failed[p] {
			return true
		}
		if p == "" {
			return false
		}
	}
}

// RangeFor returns the range ranges holds for path or, failing that, for
// the nearest path enclosing it.
func RangeFor(ranges map[string]hcl.Range, path string) hcl.Range {
	for p := path; ; p = Parent(p) {
		if r, ok := ranges[p]; ok {
			return r
		}
		if p == "" {
			return hcl.Range{}
		}
	}
}

// Parent strips the last element of a path: "a.b[0].c" → "a.b[0]" → "a.b".
func Parent(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// UpperFirst capitalises an error message to start a diagnostic's detail.
func UpperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Sort orders diagnostics by file and position (line and column: some
// ranges, such as those of a walk over an expression, lack the byte
// offset), those without a position (such as a bad -var) first, so they
// read top to bottom.
func Sort(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		case a.Start.Line != b.Start.Line:
			return a.Start.Line < b.Start.Line
		case a.Start.Column != b.Start.Column:
			return a.Start.Column < b.Start.Column
		}
		return a.Start.Byte < b.Start.Byte
	})
}
