package jobspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// newEvalContext returns the context job attributes are evaluated in: var.*
// from vars, local.* filled by evalLocals, and the function table, bounded
// and charging b (see limits.go).
func newEvalContext(vars map[string]cty.Value, b *budget) *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":   cty.ObjectVal(vars),
			"local": cty.EmptyObjectVal,
		},
		Functions: limitedFunctions(b),
	}
}

// functions is the function table with each call bounded but no budget
// over a whole jobspec, for variables' values.
var functions = limitedFunctions(nil)

// baseFunctions are the HCL functions a jobspec may call, with the names
// Nomad's and Terraform's users know, unbounded: evaluation uses them
// through limitedFunctions.
var baseFunctions = map[string]function.Function{
	"abs": stdlib.AbsoluteFunc, "can": tryfunc.CanFunc, "ceil": stdlib.CeilFunc,
	"chomp": stdlib.ChompFunc, "chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc,
	"coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc,
	"contains": stdlib.ContainsFunc, "csvdecode": stdlib.CSVDecodeFunc, "distinct": stdlib.DistinctFunc,
	"element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc, "floor": stdlib.FloorFunc,
	"format": stdlib.FormatFunc, "formatdate": stdlib.FormatDateFunc, "formatlist": stdlib.FormatListFunc,
	"indent": stdlib.IndentFunc, "index": stdlib.IndexFunc, "join": stdlib.JoinFunc,
	"jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc, "keys": stdlib.KeysFunc,
	"length": stdlib.LengthFunc, "log": stdlib.LogFunc, "lookup": stdlib.LookupFunc,
	"lower": stdlib.LowerFunc, "max": stdlib.MaxFunc, "merge": stdlib.MergeFunc, "min": stdlib.MinFunc,
	"parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "range": stdlib.RangeFunc,
	"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc,
	"replace": stdlib.ReplaceFunc, "reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
	"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
	"signum": stdlib.SignumFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "split": stdlib.SplitFunc,
	"strlen": stdlib.StrlenFunc, "strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc,
	"timeadd": stdlib.TimeAddFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc,
	"trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc, "trimsuffix": stdlib.TrimSuffixFunc,
	"try": tryfunc.TryFunc, "upper": stdlib.UpperFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
	"tobool": stdlib.MakeToFunc(cty.Bool), "tonumber": stdlib.MakeToFunc(cty.Number),
	"tostring": stdlib.MakeToFunc(cty.String), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
	"toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)), "tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
}

// runtimeRoot reports whether name is the root of one of Nomad's runtime
// interpolations, which the jobspec keeps verbatim for Nomad to resolve on
// the client: ${node.unique.id}, ${attr.kernel.name}, ${meta.rack},
// ${device.attr.memory}, ${NOMAD_ALLOC_ID}, ${CARAVAN_RANK}.
func runtimeRoot(name string) bool {
	switch name {
	case "node", "attr", "meta", "device":
		return true
	}
	return strings.HasPrefix(name, "NOMAD_") || strings.HasPrefix(name, "CARAVAN_")
}

// evalContextFor returns ctx, extended for expr with placeholders that
// evaluate each runtime interpolation to its own text: a reference to
// node.unique.id evaluates to the string "${node.unique.id}". Plain HCL has
// no hook for unknown variables (Nomad forks HCL for one), so the expression's
// references are resolved ahead of evaluation instead.
func evalContextFor(ctx *hcl.EvalContext, expr hcl.Expression) *hcl.EvalContext {
	tree := map[string]any{}
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		if !runtimeRoot(root) {
			continue
		}
		keys := []string{root}
	steps:
		for _, step := range tr[1:] {
			switch s := step.(type) {
			case hcl.TraverseAttr:
				keys = append(keys, s.Name)
			case hcl.TraverseIndex:
				if s.Key.Type() != cty.String || !s.Key.IsKnown() || s.Key.IsNull() {
					break steps
				}
				keys = append(keys, s.Key.AsString())
			default:
				break steps
			}
		}
		placeholder(tree, keys, "${"+strings.Join(keys, ".")+"}")
	}
	if len(tree) == 0 {
		return ctx
	}
	child := ctx.NewChild()
	child.Variables = make(map[string]cty.Value, len(tree))
	for k, v := range tree {
		child.Variables[k] = treeValue(v)
	}
	return child
}

// placeholder stores text at keys in a tree of nested maps. Where one
// reference is a prefix of another (attr.a and attr.a.b), the longer wins.
func placeholder(tree map[string]any, keys []string, text string) {
	for _, k := range keys[:len(keys)-1] {
		sub, ok := tree[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			tree[k] = sub
		}
		tree = sub
	}
	last := keys[len(keys)-1]
	if _, isMap := tree[last].(map[string]any); !isMap {
		tree[last] = text
	}
}

func treeValue(v any) cty.Value {
	switch v := v.(type) {
	case string:
		return cty.StringVal(v)
	case map[string]any:
		attrs := make(map[string]cty.Value, len(v))
		for k, sub := range v {
			attrs[k] = treeValue(sub)
		}
		return cty.ObjectVal(attrs)
	}
	panic(fmt.Sprintf("jobspec: placeholder tree holds %T", v))
}

// evalLocals evaluates every locals block into ctx's local.* in dependency
// order: each pass evaluates the locals whose references are all known, until
// none is left or a pass makes no progress (a cycle or an undefined name).
func evalLocals(ctx *hcl.EvalContext, blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	pending := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for name, a := range attrs {
			if prev, ok := pending[name]; ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate local value",
					Detail:   fmt.Sprintf("Local %q was already defined at %s.", name, prev.NameRange),
					Subject:  a.NameRange.Ptr(),
				})
				continue
			}
			pending[name] = a
		}
	}
	locals := map[string]cty.Value{}
	for len(pending) > 0 {
		progress := false
		for _, name := range sortedKeys(pending) {
			a := pending[name]
			if !localsKnown(a.Expr, pending) {
				continue
			}
			v, d := a.Expr.Value(evalContextFor(ctx, a.Expr))
			diags = append(diags, d...)
			locals[name] = v
			ctx.Variables["local"] = cty.ObjectVal(locals)
			delete(pending, name)
			progress = true
		}
		if progress {
			continue
		}
		for _, name := range sortedKeys(pending) {
			// Unknown, so that uses of the local fail quietly.
			locals[name] = cty.DynamicVal
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Circular reference between locals",
				Detail:   fmt.Sprintf("Local %q depends, directly or not, on itself; pending locals: %s.", name, strings.Join(sortedKeys(pending), ", ")),
				Subject:  pending[name].NameRange.Ptr(),
			})
		}
		ctx.Variables["local"] = cty.ObjectVal(locals)
		break
	}
	return diags
}

// localsKnown reports whether every local.* that expr refers to is evaluated,
// or undefined (then evaluating expr reports the undefined name).
func localsKnown(expr hcl.Expression, pending map[string]*hcl.Attribute) bool {
	for _, tr := range expr.Variables() {
		if tr.RootName() != "local" || len(tr) < 2 {
			continue
		}
		attr, ok := tr[1].(hcl.TraverseAttr)
		if !ok {
			continue
		}
		if _, isPending := pending[attr.Name]; isPending {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// anyMap decodes an arbitrary body, such as a driver's config block, into
// plain Go values: attributes become string, int64, float64, bool, []any or
// map[string]any; nested blocks become a []any of maps under the block's
// type, as Nomad's jobspec does for repeated blocks like docker's mount.
func (d *decoder) anyMap(body hcl.Body, path string) map[string]any {
	out := map[string]any{}
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		attrs, diags := body.JustAttributes()
		d.diags = append(d.diags, diags...)
		for name, a := range attrs {
			d.anyAttr(out, name, a.Expr, path)
		}
		return out
	}
	for name, a := range sb.Attributes {
		d.anyAttr(out, name, a.Expr, path)
	}
	for _, b := range sb.Blocks {
		p := join(path, b.Type)
		if len(b.Labels) > 0 {
			d.diags = append(d.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unexpected block label",
				Detail:   fmt.Sprintf("Blocks in driver config take no labels; write %s { ... }.", b.Type),
				Subject:  hcl.RangeBetween(b.LabelRanges[0], b.LabelRanges[len(b.LabelRanges)-1]).Ptr(),
			})
			continue
		}
		list, isList := out[b.Type].([]any)
		if _, exists := out[b.Type]; exists && !isList {
			d.diags = append(d.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Block and argument with the same name",
				Detail:   fmt.Sprintf("%q is set as an argument and as a block; use one.", b.Type),
				Subject:  b.DefRange().Ptr(),
			})
			continue
		}
		out[b.Type] = append(list, d.anyMap(b.Body, p))
	}
	return out
}

func (d *decoder) anyAttr(out map[string]any, name string, expr hcl.Expression, path string) {
	var v cty.Value
	if !d.decodeExpr(expr, &v) {
		d.failed[join(path, name)] = true
		return
	}
	goValue, err := ctyToGo(v)
	if err != nil {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unsupported value",
			Detail:   fmt.Sprintf("Argument %q: %v.", name, err),
			Subject:  expr.Range().Ptr(),
		})
		return
	}
	out[name] = goValue
}

// ctyToGo converts a known value to plain Go values. Whole numbers that fit
// become int64 and other numbers float64.
func ctyToGo(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsWhollyKnown() {
		return nil, fmt.Errorf("value is not known until runtime")
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		bf := v.AsBigFloat()
		if i, acc := bf.Int64(); acc == 0 {
			return i, nil
		}
		f, _ := bf.Float64()
		return f, nil
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			gv, err := ctyToGo(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, gv)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			gv, err := ctyToGo(ev)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = gv
		}
		return out, nil
	}
	return nil, fmt.Errorf("values of type %s are not supported", t.FriendlyName())
}
