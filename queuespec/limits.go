package queuespec

import (
	"fmt"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Limits that no queue file can exceed. A queue file is input from the
// network (the server parses what `caravan queue apply` sends), so each
// bound holds the cost of one parse to milliseconds and megabytes whatever
// the file asks for. A queue file has no variables, functions or for
// expressions, so its evaluation is linear in its size once these hold.
const (
	// MaxSourceBytes bounds a queue file's source.
	MaxSourceBytes = 256 << 10
	// MaxNestingDepth bounds how deeply brackets ( [ { and template
	// interpolations ${ } nest, counted on the source bytes before HCL
	// parses them: HCL's parser recurses on them and a deep enough nest
	// overflows the stack, which no recover catches.
	MaxNestingDepth = 64
	// MaxExpressionDepth bounds the depth of an expression's syntax tree,
	// which operator chains (1+1+…, !!…, a ? b : c ? …) deepen without
	// brackets; it is checked before anything is evaluated.
	MaxExpressionDepth = 256
	// MaxOperators bounds the operators (+ - * / % ! ? & | < >) outside
	// strings and comments, counted on the source bytes: a long chain of
	// them (1+1+…) costs the parser a tree as deep as the chain is long.
	MaxOperators = 4096
	// MaxQueues bounds the queue blocks of one file: a server holds at
	// most structs.MaxQueues queues.
	MaxQueues = structs.MaxQueues
	// MaxNamespaces bounds the namespaces of one queue, and MaxGPUQuotas
	// its gpu blocks: structs.Queue.Validate compares each with the
	// others, so their number must be bounded before it runs.
	MaxNamespaces = 256
	MaxGPUQuotas  = 64
)

// checkSource reports a source over MaxSourceBytes, or whose brackets nest
// over MaxNestingDepth, or with more than MaxOperators operators, naming
// where.
func checkSource(src []byte, filename string) hcl.Diagnostics {
	if len(src) > MaxSourceBytes {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Queue file too large",
			Detail:   fmt.Sprintf("%s is more than %d bytes, the most a queue file may be.", filename, MaxSourceBytes),
			Subject:  &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos},
		}}
	}
	d, ops, at := nestingDepth(src)
	if ops > MaxOperators {
		pos := position(src, at)
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Too many operators",
			Detail:   fmt.Sprintf("The queue file has more than %d operators by here, the most a queue file may.", MaxOperators),
			Subject:  &hcl.Range{Filename: filename, Start: pos, End: pos},
		}}
	}
	if d > MaxNestingDepth {
		pos := position(src, at)
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Nesting too deep",
			Detail:   fmt.Sprintf("Brackets and interpolations nest more than %d levels deep here, the most a queue file may.", MaxNestingDepth),
			Subject:  &hcl.Range{Filename: filename, Start: pos, End: pos},
		}}
	}
	return nil
}

// checkExpressions walks the parsed body before anything is evaluated: it
// reports an expression deeper than MaxExpressionDepth (the first only),
// and every for expression, including a template's %{ for } directive,
// since nested ones multiply their collections' lengths into work that
// the source's size does not bound.
func checkExpressions(body hcl.Body) hcl.Diagnostics {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	return hclsyntax.Walk(sb, &exprWalker{})
}

type exprWalker struct {
	depth    int
	reported bool
}

func (w *exprWalker) Enter(node hclsyntax.Node) hcl.Diagnostics {
	w.depth++
	if w.depth > MaxExpressionDepth && !w.reported {
		w.reported = true
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Expression too deep",
			Detail:   fmt.Sprintf("This expression nests more than %d levels deep, the most a queue file may.", MaxExpressionDepth),
			Subject:  node.Range().Ptr(),
		}}
	}
	if e, ok := node.(*hclsyntax.ForExpr); ok {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "For expression not allowed",
			Detail:   "A queue file takes literal values only: write the list or object out.",
			Subject:  e.SrcRange.Ptr(),
		}}
	}
	return nil
}

func (w *exprWalker) Exit(hclsyntax.Node) hcl.Diagnostics {
	w.depth--
	return nil
}

// nestingDepth scans src as HCL tokens closely enough to count nesting
// without parsing: ( [ { and ${ %{ open a level; strings and comments are
// skipped but for the interpolations in strings, and in a heredoc every
// bracket counts. It returns the deepest level and the operators outside
// strings and comments, stopping at the first byte past MaxNestingDepth or
// MaxOperators, and that byte's offset. Unbalanced input is left to the
// parser to report. It is jobspec's scanner (jobspec/limits.go), whose
// tests hold for it.
func nestingDepth(src []byte) (deepest, ops, at int) {
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
				if levels+extra > MaxNestingDepth {
					return levels + extra, ops, at
				}
				i = end
			case strings.IndexByte("+-*/%!?&|<>", c) >= 0:
				if ops++; ops > MaxOperators {
					return deepest, ops, i
				}
			}
		}
		if levels+extra > deepest {
			deepest, at = levels+extra, i
			if deepest > MaxNestingDepth {
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

// position returns the line and column of byte offset off in src.
func position(src []byte, off int) hcl.Pos {
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
