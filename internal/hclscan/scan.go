// Package hclscan bounds the cost of parsing HCL from the network, before
// HCL's parser sees it: jobspecs (jobspec) and queue files (queuespec)
// both refuse sources that nest too deeply or chain too many operators,
// which the parser would recurse on without bound.
package hclscan

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Limits are the bounds Check holds a source to, and what the source is
// called in its diagnostics ("jobspec", "queue file").
type Limits struct {
	What                       string
	MaxBytes, MaxDepth, MaxOps int
}

// Check reports a source over l.MaxBytes, or with more than l.MaxOps
// operators, or whose brackets nest over l.MaxDepth, naming where.
func Check(src []byte, filename string, l Limits) hcl.Diagnostics {
	at := func(off int) *hcl.Range {
		pos := Position(src, off)
		return &hcl.Range{Filename: filename, Start: pos, End: pos}
	}
	if len(src) > l.MaxBytes {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  strings.ToUpper(l.What[:1]) + l.What[1:] + " too large",
			Detail:   fmt.Sprintf("%s is %d bytes; a %s may be at most %d.", filename, len(src), l.What, l.MaxBytes),
			Subject:  at(0),
		}}
	}
	d, ops, off := Nesting(src, l.MaxDepth, l.MaxOps)
	if ops > l.MaxOps {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Too many operators",
			Detail:   fmt.Sprintf("The %s has more than %d operators by here, the most a %s may.", l.What, l.MaxOps, l.What),
			Subject:  at(off),
		}}
	}
	if d > l.MaxDepth {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Nesting too deep",
			Detail:   fmt.Sprintf("Brackets and interpolations nest more than %d levels deep here, the most a %s may.", l.MaxDepth, l.What),
			Subject:  at(off),
		}}
	}
	return nil
}

// Nesting scans src as HCL or JSON tokens closely enough to count
// nesting without parsing: ( [ { and ${ %{ open a level; strings and
// comments are skipped but for the interpolations in strings, and in a
// heredoc every bracket counts. It returns the deepest level and the
// operators outside strings and comments, stopping at the first byte past
// maxDepth or maxOps, and that byte's offset. Unbalanced input is left to
// the parser to report.
func Nesting(src []byte, maxDepth, maxOps int) (deepest, ops, at int) {
	const (
		bracket = iota
		str
		interp
	)
	var stack []byte
	levels := 0
	push := func(kind byte) {
		stack = append(stack, kind)
		if kind != str {
			levels++
		}
	}
	pop := func() {
		if len(stack) == 0 {
			return
		}
		if stack[len(stack)-1] != str {
			levels--
		}
		stack = stack[:len(stack)-1]
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		extra := 0
		if len(stack) > 0 && stack[len(stack)-1] == str {
			switch {
			case c == '\\':
				i++
			case c == '"':
				pop()
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				i++
				push(interp)
			}
		} else {
			switch {
			case c == '"':
				push(str)
			case c == '(' || c == '[' || c == '{':
				push(bracket)
			case c == ')' || c == ']' || c == '}':
				pop()
			case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
				for i < len(src) && src[i] != '\n' {
					i++
				}
			case c == '/' && i+1 < len(src) && src[i+1] == '*':
				for i += 2; i+1 < len(src) && !(src[i] == '*' && src[i+1] == '/'); i++ {
				}
				i++
			case c == '<' && i+1 < len(src) && src[i+1] == '<' && !(i+2 < len(src) && src[i+2] == '='):
				var end int
				end, extra, at = heredoc(src, i)
				if levels+extra > maxDepth {
					return levels + extra, ops, at
				}
				i = end
			case strings.IndexByte("+-*/%!?&|<>", c) >= 0:
				if ops++; ops > maxOps {
					return deepest, ops, i
				}
			}
		}
		if levels+extra > deepest {
			deepest, at = levels+extra, i
			if deepest > maxDepth {
				return deepest, ops, at
			}
		}
	}
	return deepest, ops, at
}

// heredoc skips the heredoc that starts at src[i] ("<<EOF" or "<<-EOF" and
// lines up to the marker alone on one). It returns the offset of its last
// byte, and how deeply brackets nest in it, all of them counted as code,
// with the offset of the deepest.
func heredoc(src []byte, i int) (end, depth, at int) {
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	m := j
	for m < len(src) && (src[m] == '_' || src[m] == '-' || src[m] >= 'a' && src[m] <= 'z' || src[m] >= 'A' && src[m] <= 'Z' || src[m] >= '0' && src[m] <= '9') {
		m++
	}
	marker := string(src[j:m])
	if marker == "" {
		return i + 1, 0, i
	}
	level := 0
	for k := m; k < len(src); k++ {
		switch src[k] {
		case '(', '[', '{':
			level++
			if level > depth {
				depth, at = level, k
			}
		case ')', ']', '}':
			level = max(level-1, 0)
		case '\n':
			line := k + 1
			for line < len(src) && (src[line] == ' ' || src[line] == '\t') {
				line++
			}
			if e := line + len(marker); e <= len(src) && string(src[line:e]) == marker && (e == len(src) || src[e] == '\n' || src[e] == '\r') {
				return e - 1, depth, at
			}
		}
	}
	return len(src) - 1, depth, at
}

// Position returns the line and column of byte offset off in src.
func Position(src []byte, off int) hcl.Pos {
	pos := hcl.Pos{Line: 1, Column: 1, Byte: off}
	for _, c := range src[:min(off, len(src))] {
		if c == '\n' {
			pos.Line++
			pos.Column = 1
		} else {
			pos.Column++
		}
	}
	return pos
}
