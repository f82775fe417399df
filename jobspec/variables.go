package jobspec

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// EnvVarPrefix prefixes environment variables that set jobspec variables:
// CARAVAN_VAR_image sets var.image.
const EnvVarPrefix = "CARAVAN_VAR_"

// variable is a declared `variable "name" {}` block.
type variable struct {
	name string
	typ  cty.Type  // cty.DynamicPseudoType when the block gives no type
	def  cty.Value // cty.NilVal when the block gives no default
	decl hcl.Range
}

// variables declares the variable blocks and resolves each one's value from,
// in increasing precedence, its default, the environment, the var files and
// the -var arguments.
func (p *Parser) variables(blocks hcl.Blocks, cfg *Config) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	decls := map[string]*variable{}
	for _, b := range blocks {
		v, d := declare(b)
		diags = append(diags, d...)
		if prev, ok := decls[v.name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate variable block",
				Detail:   fmt.Sprintf("Variable %q was already declared at %s.", v.name, prev.decl),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		decls[v.name] = v
	}

	values := map[string]cty.Value{}
	for _, v := range decls {
		if v.def != cty.NilVal {
			values[v.name] = v.def
		}
	}
	for _, kv := range cfg.Environ {
		name, raw, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvVarPrefix) {
			continue
		}
		name = strings.TrimPrefix(name, EnvVarPrefix)
		// Undeclared environment variables are ignored: the environment is
		// shared by every jobspec a user runs.
		if v, ok := decls[name]; ok {
			val, d := v.parseRaw(raw, "<value for "+EnvVarPrefix+name+">")
			diags = append(diags, d...)
			values[name] = val
		}
	}
	for _, path := range cfg.VarFiles {
		diags = append(diags, p.varFile(path, decls, values)...)
	}
	for _, arg := range cfg.ArgVars {
		name, raw, ok := strings.Cut(arg, "=")
		if !ok || name == "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid -var option",
				Detail:   fmt.Sprintf("The -var option %q is not of the form name=value, e.g. -var 'image=ghcr.io/acme/resnet:1.5'.", arg),
			})
			continue
		}
		v, ok := decls[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Undefined -var variable",
				Detail:   fmt.Sprintf("A value was given for variable %q with -var, but the jobspec declares no variable %q.", name, name),
			})
			continue
		}
		val, d := v.parseRaw(raw, "<value for -var "+name+">")
		diags = append(diags, d...)
		values[name] = val
	}

	for name, v := range decls {
		if _, ok := values[name]; !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing value for variable",
				Detail:   fmt.Sprintf("Variable %q has no default; set it with -var '%s=...', a -var-file, or %s%s.", name, name, EnvVarPrefix, name),
				Subject:  v.decl.Ptr(),
			})
			values[name] = cty.DynamicVal
		}
	}
	return values, diags
}

// declare reads a variable block. A default is evaluated without variables
// but with functions, and must convert to the declared type.
func declare(b *hcl.Block) (*variable, hcl.Diagnostics) {
	v := &variable{name: b.Labels[0], typ: cty.DynamicPseudoType, decl: b.DefRange}
	content, diags := b.Body.Content(variableSchema)
	if !hclsyntax.ValidIdentifier(v.name) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid variable name",
			Detail:   "A variable name must start with a letter and contain only letters, digits, underscores and dashes.",
			Subject:  b.LabelRanges[0].Ptr(),
		})
	}
	if a, ok := content.Attributes["type"]; ok {
		t, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.typ = t
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(&hcl.EvalContext{Functions: functions})
		diags = append(diags, d...)
		if !d.HasErrors() {
			val, d = v.convert(val, a.Expr.Range())
			diags = append(diags, d...)
			v.def = val
		}
	}
	return v, diags
}

// parseRaw turns a value given on the command line or in the environment
// into the variable's type: verbatim for a string (or untyped) variable, as
// an HCL expression otherwise.
func (v *variable) parseRaw(raw, source string) (cty.Value, hcl.Diagnostics) {
	rng := hcl.Range{Filename: source, Start: hcl.InitialPos, End: hcl.InitialPos}
	if v.typ == cty.String || v.typ == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	if diags := checkSource([]byte(raw), source); diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), source, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	val, diags := expr.Value(&hcl.EvalContext{Functions: functions})
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return v.convert(val, rng)
}

func (v *variable) convert(val cty.Value, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	out, err := convert.Convert(val, v.typ)
	if err != nil {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("The value for variable %q is not a %s: %v.", v.name, v.typ.FriendlyName(), err),
			Subject:  rng.Ptr(),
		}}
	}
	return out, nil
}

// varFile reads a -var-file of `name = value` lines into values.
func (p *Parser) varFile(path string, decls map[string]*variable, values map[string]cty.Value) hcl.Diagnostics {
	src, err := os.ReadFile(path)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Failed to read file", Detail: err.Error()}}
	}
	if diags := checkSource(src, path); diags.HasErrors() {
		return diags
	}
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(path, ".json") {
		file, diags = p.p.ParseJSON(src, path)
	} else {
		file, diags = p.p.ParseHCL(src, path)
	}
	if diags.HasErrors() {
		return diags
	}
	attrs, d := file.Body.JustAttributes()
	diags = append(diags, d...)
	for name, a := range attrs {
		v, ok := decls[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Undefined variable",
				Detail:   fmt.Sprintf("The var file sets %q, but the jobspec declares no variable %q.", name, name),
				Subject:  a.NameRange.Ptr(),
			})
			continue
		}
		val, d := a.Expr.Value(&hcl.EvalContext{Functions: functions})
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		val, d = v.convert(val, a.Expr.Range())
		diags = append(diags, d...)
		values[name] = val
	}
	return diags
}
