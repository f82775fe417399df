package queuespec

import (
	"fmt"
	"github.com/caravan-sched/caravan/internal/hcldiag"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// decoder turns one queue block into a structs.Queue. It records the
// source range of every block and argument under the path that
// structs.Queue.Validate names it by ("weight", "namespaces[1]",
// "quota.gpu[0].lending_limit"), so that validation errors point at the
// right line.
type decoder struct {
	diags hcl.Diagnostics
	// ranges maps a path to where it is defined; "" is the queue block.
	ranges map[string]hcl.Range
	// failed holds the paths that did not decode; validation errors about
	// them would only repeat the decoding error, so they are dropped.
	failed map[string]bool
}

func newDecoder() *decoder {
	return &decoder{ranges: map[string]hcl.Range{}, failed: map[string]bool{}}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// content decodes a block body against schema. It returns the (possibly
// partial) content even when the body has errors, so that every mistake
// of the file is found in one pass.
func (d *decoder) content(body hcl.Body, schema *hcl.BodySchema) *hcl.BodyContent {
	c, diags := body.Content(schema)
	d.diags = append(d.diags, diags...)
	return c
}

// attr decodes the argument name of c into target, a pointer to a Go type
// gohcl converts to, with no variables or functions. It reports whether
// the argument was given and decoded.
func (d *decoder) attr(c *hcl.BodyContent, path, name string, target any) bool {
	a, ok := c.Attributes[name]
	if !ok {
		return false
	}
	p := join(path, name)
	d.ranges[p] = a.Expr.Range()
	// Evaluated first, so that a variable or a function call is reported
	// once, not again as an unknown value of the wrong type.
	_, diags := a.Expr.Value(nil)
	if !diags.HasErrors() {
		diags = gohcl.DecodeExpression(a.Expr, nil, target)
	}
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		d.failed[p] = true
		return false
	}
	return true
}

// errorf reports an error at rng about path, which validation then leaves
// alone.
func (d *decoder) errorf(rng hcl.Range, path, format string, args ...any) {
	d.failed[path] = true
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid " + path,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

// nonZero decodes an argument for which structs reads 0 as "the default"
// or "not limited". Written in a queue file, 0 is a mistake, not a
// request for the default, so it is reported here.
func (d *decoder) nonZero(c *hcl.BodyContent, path, name string, target *int, hint string) {
	if d.attr(c, path, name, target) && *target == 0 {
		p := join(path, name)
		d.errorf(d.ranges[p], p, "%s must not be 0; %s.", name, hint)
	}
}

// optional decodes an argument for which structs reads nil as "no
// limit".
func (d *decoder) optional(c *hcl.BodyContent, path, name string) *int {
	var v int
	if !d.attr(c, path, name, &v) {
		return nil
	}
	return &v
}

func (d *decoder) queue(b *hcl.Block) *structs.Queue {
	q := &structs.Queue{Name: b.Labels[0]}
	d.ranges[""] = b.DefRange
	d.ranges["name"] = b.LabelRanges[0]
	c := d.content(b.Body, queueSchema)

	q.Namespaces = d.namespaces(c)
	if d.attr(c, "", "weight", &q.Weight) && q.Weight == 0 {
		d.errorf(d.ranges["weight"], "weight", "weight must not be 0; leave it out for the default weight, %v.", structs.DefaultWeight)
	}
	d.attr(c, "", "cohort", &q.Cohort)

	quotas := c.Blocks.OfType("quota")
	for _, dup := range quotas[min(1, len(quotas)):] {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Duplicate quota block",
			Detail:   "Only one quota block is allowed here; the first one is at " + quotas[0].DefRange.String() + ".",
			Subject:  dup.DefRange.Ptr(),
		})
	}
	if len(quotas) > 0 {
		q.Quota = d.quota(quotas[0], "quota")
	}
	return q
}

// namespaces decodes the namespaces list, recording each element's range
// when it is written out as a list, so that an error about one points at
// it.
func (d *decoder) namespaces(c *hcl.BodyContent) []string {
	var out []string
	if !d.attr(c, "", "namespaces", &out) {
		return nil
	}
	if len(out) > MaxNamespaces {
		d.errorf(d.ranges["namespaces"], "namespaces", "%d namespaces are more than the %d a queue may have; give a pattern such as \"nlp-*\".", len(out), MaxNamespaces)
		return nil
	}
	if elems, diags := hcl.ExprList(c.Attributes["namespaces"].Expr); !diags.HasErrors() && len(elems) == len(out) {
		for i, e := range elems {
			d.ranges[fmt.Sprintf("namespaces[%d]", i)] = e.Range()
		}
	}
	if len(out) == 0 {
		return nil // as if left out: Validate asks for namespaces
	}
	return out
}

func (d *decoder) quota(b *hcl.Block, path string) structs.QueueQuota {
	var q structs.QueueQuota
	d.ranges[path] = b.DefRange
	c := d.content(b.Body, quotaSchema)
	d.nonZero(c, path, "cpu", &q.CPU, "leave it out for no CPU limit")
	d.nonZero(c, path, "memory", &q.MemoryMB, "leave it out for no memory limit")
	gpus := c.Blocks.OfType("gpu")
	if len(gpus) > MaxGPUQuotas {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Too many gpu blocks",
			Detail:   fmt.Sprintf("A quota may have at most %d gpu blocks; give \"*\" for any GPU type.", MaxGPUQuotas),
			Subject:  gpus[MaxGPUQuotas].DefRange.Ptr(),
		})
		d.failed[path] = true
		return q
	}
	for i, gb := range gpus {
		p := fmt.Sprintf("%s[%d]", join(path, "gpu"), i)
		d.ranges[p] = gb.DefRange
		d.ranges[join(p, "type")] = gb.LabelRanges[0]
		g := &structs.GPUQuota{Type: gb.Labels[0]}
		gc := d.content(gb.Body, gpuSchema)
		if !d.attr(gc, p, "nominal", &g.Nominal) {
			// Missing (reported by Content) or wrong: a lending_limit
			// compared with it would only add noise.
			d.failed[join(p, "lending_limit")] = true
		}
		g.BorrowingLimit = d.optional(gc, p, "borrowing_limit")
		g.LendingLimit = d.optional(gc, p, "lending_limit")
		q.GPU = append(q.GPU, g)
	}
	return q
}

// validation turns the FieldErrors of structs.Queue.Validate into
// diagnostics at the range recorded for each field, or for its nearest
// enclosing block when the field was not written (a missing argument).
func (d *decoder) validation(err error) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, fe := range structs.FieldErrors(err) {
		if hcldiag.Failed(d.failed, fe.Path) {
			continue
		}
		rng := hcldiag.RangeFor(d.ranges, fe.Path)
		diag := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng}
		switch {
		case fe.Err == structs.ErrMissing && strings.HasSuffix(fe.Path, ".type"):
			// gpu's type is its label, which HCL requires but may be blank.
			diag.Summary = "Missing GPU type"
			diag.Detail = `A gpu block's label names a GPU type, such as "A100", or "*" for any type.`
		case fe.Err == structs.ErrMissing:
			diag.Summary = "Missing required argument"
			diag.Detail = fmt.Sprintf("The argument %q is required here.", fe.Path)
		default:
			diag.Summary = "Invalid " + fe.Path
			diag.Detail = hcldiag.UpperFirst(fe.Err.Error()) + "."
		}
		diags = append(diags, diag)
	}
	return diags
}
