package queuespec

import (
	"github.com/caravan-sched/caravan/internal/hclscan"
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
	// its gpu blocks, as structs.Queue.Validate does.
	MaxNamespaces = structs.MaxQueueNamespaces
	MaxGPUQuotas  = structs.MaxQueueGPUQuotas
)

// checkSource holds a source to the queue file's limits (hclscan.Check).
func checkSource(src []byte, filename string) hcl.Diagnostics {
	return hclscan.Check(src, filename, hclscan.Limits{What: "queue file", MaxBytes: MaxSourceBytes, MaxDepth: MaxNestingDepth, MaxOps: MaxOperators})
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
	return hclsyntax.Walk(sb, &exprWalker{depth: hclscan.Depth{Max: MaxExpressionDepth, What: "queue file"}})
}

type exprWalker struct {
	depth hclscan.Depth
}

func (w *exprWalker) Enter(node hclsyntax.Node) hcl.Diagnostics {
	if diags := w.depth.Enter(node); diags != nil {
		return diags
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
	w.depth.Exit()
	return nil
}

// nestingDepth is hclscan.Nesting at a queue file's limits.
func nestingDepth(src []byte) (deepest, ops, at int) {
	return hclscan.Nesting(src, MaxNestingDepth, MaxOperators)
}
