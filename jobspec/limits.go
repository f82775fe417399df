package jobspec

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/caravan-sched/caravan/internal/hclscan"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Limits that no jobspec can exceed. A jobspec is input from the network:
// the server parses it where it enters, so each bound holds the cost of one
// parse to milliseconds and megabytes whatever the jobspec asks for.
const (
	// MaxSourceBytes bounds a jobspec's source, and each -var value or
	// var file.
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
	// MaxCollectionLength bounds the elements of a list, set, map or
	// object a function builds (range, setproduct, formatlist, …).
	MaxCollectionLength = 10_000
	// MaxStringBytes bounds a string a function or template builds.
	MaxStringBytes = 1 << 20
	// MaxEvalCost bounds the work of evaluating one jobspec, about in
	// bytes built: a string counts its bytes, a collection elementCost
	// for itself and each element plus their costs, each iteration of a
	// for expression elementCost for each node of its body.
	MaxEvalCost = 8 << 20
	// elementCost is what one value in a collection counts against
	// MaxEvalCost, about its size in memory.
	elementCost = 64
	// MaxEvalTime bounds the time spent evaluating one jobspec.
	MaxEvalTime = 2 * time.Second
	// maxFormatWidth bounds a width or precision in format's verbs.
	maxFormatWidth = 1000
)

// budget meters the evaluation of one jobspec against MaxEvalCost and
// MaxEvalTime. A nil budget meters nothing; the per-call bounds of the
// functions hold still. A budget is not safe for concurrent use.
type budget struct {
	cost int64
	// calls counts the metered calls (function calls, for expressions'
	// collections, template parts), spent or not: the work of an
	// evaluation, which cost stops counting once the budget is spent.
	calls    int64
	deadline time.Time
	// now is the budget's clock, time.Now but in tests.
	now func() time.Time
	// spent is set once a charge failed: later charges fail quietly (see
	// exhausted), so that evaluation stops building at once without a
	// diagnostic for each remaining iteration.
	spent bool
}

// exhausted reports whether a charge has failed already, and counts a
// metered call: every meter asks it first. Callers then return an unknown
// value and no error: the first failure was reported, and unknown values
// stop the evaluation of what depends on them.
func (b *budget) exhausted() bool {
	if b == nil {
		return false
	}
	b.calls++
	return b.spent
}

// newBudget returns the budget of one evaluation, on the wall clock. Tests
// replace it to see the budget and to run it on a clock of their own.
var newBudget = func() *budget { return newBudgetAt(time.Now) }

// newBudgetAt returns a budget whose deadline is MaxEvalTime after now().
func newBudgetAt(now func() time.Time) *budget {
	return &budget{now: now, deadline: now().Add(MaxEvalTime)}
}

// charge adds n to the cost spent, and fails once the cost or the time is
// over its bound.
func (b *budget) charge(n int64) error {
	if b == nil {
		return nil
	}
	b.cost += n
	switch {
	case b.spent:
		return errSpent
	case b.cost > MaxEvalCost:
		b.spent = true
		return fmt.Errorf("the jobspec builds more than %d MiB of values in all, the most a jobspec may evaluate", MaxEvalCost>>20)
	case b.now().After(b.deadline):
		b.spent = true
		return fmt.Errorf("evaluating the jobspec takes more than %v, the most it may take", MaxEvalTime)
	}
	return nil
}

// errSpent is a charge's error once the budget is exhausted; it is
// never reported (see budget.exhausted).
var errSpent = errors.New("evaluation budget spent")

// valueCost is what v counts against a budget: its string's bytes, or
// elementCost plus its elements' costs.
func valueCost(v cty.Value) int64 {
	if !v.IsKnown() || v.IsNull() {
		return 1
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return int64(len(v.AsString())) + 1
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		n := int64(elementCost)
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			n += valueCost(e)
		}
		return n
	}
	return elementCost
}

// checkSize fails for a string or collection over its bound.
func checkSize(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		if n := len(v.AsString()); n > MaxStringBytes {
			return fmt.Errorf("the result is a string of %d bytes; a jobspec may build strings of at most %d", n, MaxStringBytes)
		}
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		if n := v.LengthInt(); n > MaxCollectionLength {
			return fmt.Errorf("the result has %d elements; a jobspec may build collections of at most %d", n, MaxCollectionLength)
		}
	}
	return nil
}

// lengthOf returns the length of a known collection or string, and 0 for
// anything else.
func lengthOf(v cty.Value) int {
	if !v.IsKnown() || v.IsNull() {
		return 0
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return len(v.AsString())
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		return v.LengthInt()
	}
	return 0
}

// preChecks fail, before a function runs, the calls whose result would be
// over a bound: the functions whose result can be much larger than their
// arguments. Others are checked on their result.
var preChecks = map[string]func(args []cty.Value) error{
	"range":      checkRange,
	"setproduct": checkSetProduct,
	"format":     checkFormat,
	"formatlist": checkFormat,
	"indent":     checkIndent,
	"replace":    checkReplace,
	"jsondecode": checkJSONDecode,
	"concat":     checkSum(false),
	"merge":      checkSum(false),
	"setunion":   checkSum(false),
	"flatten":    checkSum(true),
	"join":       checkJoin,
}

// checkSum bounds the elements of the arguments together, for functions
// whose result holds them all; deep counts nested lists' elements too, as
// flatten's result holds them.
func checkSum(deep bool) func(args []cty.Value) error {
	return func(args []cty.Value) error {
		n := 0
		for _, a := range args {
			n += leaves(a, deep)
		}
		if n > MaxCollectionLength {
			return fmt.Errorf("the result would have %d elements; a jobspec may build collections of at most %d", n, MaxCollectionLength)
		}
		return nil
	}
}

// leaves counts v's elements, and with deep those of the lists and sets in
// it instead of the lists and sets themselves. It stops counting past
// MaxCollectionLength.
func leaves(v cty.Value, deep bool) int {
	if !v.IsKnown() || v.IsNull() {
		return 0
	}
	t := v.Type()
	if !(t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType()) {
		return 1
	}
	if !deep {
		return v.LengthInt()
	}
	n := 0
	for it := v.ElementIterator(); it.Next() && n <= MaxCollectionLength; {
		_, e := it.Element()
		et := e.Type()
		if et.IsListType() || et.IsSetType() || et.IsTupleType() {
			n += leaves(e, true)
		} else {
			n++
		}
	}
	return n
}

// checkJoin bounds the string join would build.
func checkJoin(args []cty.Value) error {
	if len(args) < 2 {
		return nil
	}
	n := 0
	for _, list := range args[1:] {
		if !list.IsKnown() || list.IsNull() || !list.CanIterateElements() {
			continue
		}
		for it := list.ElementIterator(); it.Next(); {
			_, e := it.Element()
			n += lengthOf(e) + lengthOf(args[0])
		}
	}
	if n > MaxStringBytes {
		return fmt.Errorf("join would build a string of more than %d bytes", MaxStringBytes)
	}
	return nil
}

func number(v cty.Value) (float64, bool) {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
		return 0, false
	}
	f, _ := v.AsBigFloat().Float64()
	return f, true
}

func checkRange(args []cty.Value) error {
	start, limit, step := 0.0, 0.0, 1.0
	var ok bool
	switch len(args) {
	case 1:
		limit, ok = number(args[0])
	case 2, 3:
		var ok1, ok2 bool
		start, ok1 = number(args[0])
		limit, ok2 = number(args[1])
		ok = ok1 && ok2
		if len(args) == 3 {
			step, ok = number(args[2])
			ok = ok && ok1 && ok2
		}
	}
	if !ok || step == 0 {
		return nil // range reports it
	}
	if n := math.Ceil((limit - start) / step); n > MaxCollectionLength {
		return fmt.Errorf("range would build %.0f elements; a jobspec may build collections of at most %d", n, MaxCollectionLength)
	}
	return nil
}

func checkSetProduct(args []cty.Value) error {
	n := 1.0
	for _, a := range args {
		n *= float64(lengthOf(a))
	}
	if n > MaxCollectionLength {
		return fmt.Errorf("setproduct would build %.0f elements; a jobspec may build collections of at most %d", n, MaxCollectionLength)
	}
	return nil
}

// checkFormat bounds the widths and precisions in a format string
// ("%999999999d" pads to a gigabyte).
func checkFormat(args []cty.Value) error {
	if len(args) == 0 || !args[0].IsKnown() || args[0].IsNull() || args[0].Type() != cty.String {
		return nil
	}
	f := args[0].AsString()
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		n := 0
		for i++; i < len(f); i++ {
			c := f[i]
			if c >= '0' && c <= '9' {
				n = min(n*10+int(c-'0'), math.MaxInt32)
				if n > maxFormatWidth {
					return fmt.Errorf("a width or precision in the format is more than %d", maxFormatWidth)
				}
				continue
			}
			if c == '.' || c == '[' || c == ']' || c == '-' || c == '+' || c == '#' || c == ' ' {
				n = 0
				continue
			}
			break
		}
	}
	return nil
}

func checkIndent(args []cty.Value) error {
	if len(args) < 2 {
		return nil
	}
	if n, ok := number(args[0]); ok && n*float64(lengthOf(args[1])+1) > MaxStringBytes {
		return fmt.Errorf("indent would build a string of more than %d bytes", MaxStringBytes)
	}
	return nil
}

func checkReplace(args []cty.Value) error {
	if len(args) < 3 {
		return nil
	}
	s, sub, repl := lengthOf(args[0]), lengthOf(args[1]), lengthOf(args[2])
	if float64(s)+float64(s+1)/float64(max(sub, 1))*float64(repl) > MaxStringBytes {
		return fmt.Errorf("replace could build a string of more than %d bytes", MaxStringBytes)
	}
	return nil
}

func checkJSONDecode(args []cty.Value) error {
	if len(args) == 0 || !args[0].IsKnown() || args[0].IsNull() || args[0].Type() != cty.String {
		return nil
	}
	if d, _, _ := nestingDepth([]byte(args[0].AsString())); d > MaxNestingDepth {
		return fmt.Errorf("the JSON nests more than %d levels deep", MaxNestingDepth)
	}
	return nil
}

// limited returns f wrapped with the bounds: the budget's, name's pre-check,
// and the size of its result.
func limited(name string, f function.Function, b *budget) function.Function {
	pre := preChecks[name]
	spec := &function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			// Some functions work in their Type too: jsondecode decodes.
			if pre != nil {
				if err := pre(args); err != nil {
					return cty.DynamicPseudoType, err
				}
			}
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
			if b.exhausted() {
				return cty.UnknownVal(ret), nil
			}
			if err := b.charge(1); err != nil {
				return cty.DynamicVal, err
			}
			if pre != nil {
				if err := pre(args); err != nil {
					return cty.DynamicVal, err
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			if err := checkSize(v); err != nil {
				return cty.DynamicVal, err
			}
			if err := b.charge(valueCost(v)); err != nil {
				return cty.DynamicVal, err
			}
			return v, nil
		},
	}
	return function.New(spec)
}

// Names of the functions that meter a for expression's iterations and a
// template's parts; the rewrite of meter calls them.
const (
	forMeter      = "limit::for"
	templateMeter = "limit::template"
)

// limitedFunctions returns the function table with every function bounded
// (try and can evaluate expressions, whose calls are bounded themselves),
// and the meters, charging b.
func limitedFunctions(b *budget) map[string]function.Function {
	out := make(map[string]function.Function, len(baseFunctions)+2)
	for name, f := range baseFunctions {
		if name == "try" || name == "can" {
			out[name] = f
			continue
		}
		out[name] = limited(name, f, b)
	}
	out[forMeter] = function.New(&function.Spec{
		Params: []function.Parameter{
			// AllowMarked spares cty a deep copy of the collection at each call.
			{Name: "collection", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true},
			{Name: "weight", Type: cty.Number},
		},
		Type: func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
		Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
			if b.exhausted() {
				return cty.UnknownVal(ret), nil
			}
			w, _ := number(args[1])
			n := lengthOf(args[0])
			if args[0].IsKnown() && !args[0].IsNull() && args[0].Type() == cty.String {
				n = 0 // for reports iterating over a string
			}
			if err := b.charge(int64(n) * int64(w) * elementCost); err != nil {
				return cty.DynamicVal, err
			}
			return args[0], nil
		},
	})
	out[templateMeter] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "part", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true}},
		Type:   func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
		Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
			if b.exhausted() {
				return cty.UnknownVal(ret), nil
			}
			if err := b.charge(valueCost(args[0])); err != nil {
				return cty.DynamicVal, err
			}
			return args[0], nil
		},
	})
	return out
}

// meter rewrites body's expressions, before they are evaluated, so that
// the budget meters what no function call shows: each for expression's
// collection passes through forMeter with its body's size as weight, and
// each interpolated part of a template through templateMeter. It also
// checks that no expression is deeper than MaxExpressionDepth, and reports
// the first that is. Bodies of other syntaxes (JSON) are left as they are.
func meter(body hcl.Body) hcl.Diagnostics {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	w := &meterWalker{depth: hclscan.Depth{Max: MaxExpressionDepth, What: "jobspec"}}
	return hclsyntax.Walk(sb, w)
}

type meterWalker struct {
	depth hclscan.Depth
}

func (w *meterWalker) Enter(node hclsyntax.Node) hcl.Diagnostics {
	if diags := w.depth.Enter(node); diags != nil {
		return diags
	}
	switch e := node.(type) {
	case *hclsyntax.ForExpr:
		weight := 1
		for _, sub := range []hclsyntax.Expression{e.KeyExpr, e.ValExpr, e.CondExpr} {
			if sub != nil {
				weight += nodeCount(sub)
			}
		}
		e.CollExpr = meterCall(forMeter, e.CollExpr, cty.NumberIntVal(int64(weight)))
	case *hclsyntax.TemplateExpr:
		for i, p := range e.Parts {
			if _, literal := p.(*hclsyntax.LiteralValueExpr); !literal {
				e.Parts[i] = meterCall(templateMeter, p)
			}
		}
	}
	return nil
}

func (w *meterWalker) Exit(hclsyntax.Node) hcl.Diagnostics {
	w.depth.Exit()
	return nil
}

// meterCall wraps expr in a call of the meter name, with extra literal
// arguments.
func meterCall(name string, expr hclsyntax.Expression, extra ...cty.Value) hclsyntax.Expression {
	rng := expr.Range()
	args := []hclsyntax.Expression{expr}
	for _, v := range extra {
		args = append(args, &hclsyntax.LiteralValueExpr{Val: v, SrcRange: rng})
	}
	return &hclsyntax.FunctionCallExpr{Name: name, Args: args, NameRange: rng, OpenParenRange: rng, CloseParenRange: rng}
}

// nodeCount counts the syntax nodes of expr.
func nodeCount(expr hclsyntax.Expression) int {
	n := 0
	hclsyntax.VisitAll(expr, func(hclsyntax.Node) hcl.Diagnostics {
		n++
		return nil
	})
	return n
}

// checkSource holds a source to the jobspec's limits (hclscan.Check).
func checkSource(src []byte, filename string) hcl.Diagnostics {
	return hclscan.Check(src, filename, hclscan.Limits{What: "jobspec", MaxBytes: MaxSourceBytes, MaxDepth: MaxNestingDepth, MaxOps: MaxOperators})
}

// nestingDepth is hclscan.Nesting at the jobspec's limits.
func nestingDepth(src []byte) (deepest, ops, at int) {
	return hclscan.Nesting(src, MaxNestingDepth, MaxOperators)
}
