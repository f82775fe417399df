package jobspec

import (
	"fmt"
	"github.com/caravan-sched/caravan/internal/hcldiag"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"
)

// decoder turns the job block into a structs.Job. It records the source range
// of every block and attribute under its jobspec path ("elastic.workers.min",
// "worker.resources.device[0]") so that validation errors, which name fields
// by the same paths, can point at the right line.
type decoder struct {
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
	// ranges maps a jobspec path to where it is defined; "" is the job block.
	ranges map[string]hcl.Range
	// failed holds the paths that did not decode; validation errors about
	// them would only repeat the decoding error, so they are dropped.
	failed map[string]bool
	// nomad is set while decoding a Nomad job file, whose resources
	// blocks may hold what Caravan does not read (memory_max, cores).
	nomad bool
}

func newDecoder(ctx *hcl.EvalContext) *decoder {
	return &decoder{ctx: ctx, ranges: map[string]hcl.Range{}, failed: map[string]bool{}}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// content decodes a block body against schema. It returns the (possibly
// partial) content even when the body has errors, so that every mistake of
// the file is found in one pass.
func (d *decoder) content(body hcl.Body, schema *hcl.BodySchema) *hcl.BodyContent {
	c, diags := body.Content(schema)
	d.diags = append(d.diags, diags...)
	return c
}

// attr decodes the attribute name of c into target, which must be a pointer
// to a Go type gohcl can convert to. It reports whether the attribute was set.
func (d *decoder) attr(c *hcl.BodyContent, path, name string, target any) bool {
	a, ok := c.Attributes[name]
	if !ok {
		return false
	}
	p := join(path, name)
	d.ranges[p] = a.Expr.Range()
	if !d.decodeExpr(a.Expr, target) {
		d.failed[p] = true
		return false
	}
	return true
}

// decodeExpr evaluates expr into target. A value left unknown by an earlier
// error (an undefined variable, a cyclic local) fails quietly: that error is
// already reported, and repeating it at every use would bury it.
func (d *decoder) decodeExpr(expr hcl.Expression, target any) bool {
	ctx := evalContextFor(d.ctx, expr)
	val, diags := expr.Value(ctx)
	if !diags.HasErrors() && !val.IsWhollyKnown() {
		return false
	}
	if !diags.HasErrors() {
		diags = gohcl.DecodeExpression(expr, ctx, target)
	}
	d.diags = append(d.diags, diags...)
	return !diags.HasErrors()
}

// nonZero decodes an attribute for which structs reads 0 as "use the
// default". Written in a jobspec, 0 is a mistake, not a request for the
// default, so it is reported here.
func (d *decoder) nonZero(c *hcl.BodyContent, path, name string, target any) {
	if !d.attr(c, path, name, target) || !reflect.ValueOf(target).Elem().IsZero() {
		return
	}
	p := join(path, name)
	d.failed[p] = true
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid " + p,
		Detail:   name + " must not be 0.",
		Subject:  d.ranges[p].Ptr(),
	})
}

// duration decodes a duration string such as "2m".
func (d *decoder) duration(c *hcl.BodyContent, path, name string, target *time.Duration) {
	var s string
	if !d.attr(c, path, name, &s) {
		return
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		p := join(path, name)
		d.failed[p] = true
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid duration",
			Detail:   fmt.Sprintf("%q is not a duration; use a number with a unit, such as \"90s\" or \"2m\".", s),
			Subject:  d.ranges[p].Ptr(),
		})
		return
	}
	*target = v
}

// single returns the one block of type typ in c, or nil, and reports any
// further blocks of that type as duplicates.
func (d *decoder) single(c *hcl.BodyContent, path, typ string) *hcl.Block {
	bs := c.Blocks.OfType(typ)
	if len(bs) == 0 {
		return nil
	}
	for _, b := range bs[1:] {
		d.diags = append(d.diags, duplicate(b, bs[0]))
	}
	d.ranges[join(path, typ)] = bs[0].DefRange
	return bs[0]
}

// stringMap decodes a block of `key = value` lines, such as env or meta.
func (d *decoder) stringMap(b *hcl.Block, path string) map[string]string {
	if b == nil {
		return nil
	}
	attrs, diags := b.Body.JustAttributes()
	d.diags = append(d.diags, diags...)
	out := make(map[string]string, len(attrs))
	for name, a := range attrs {
		var s string
		p := join(path, name)
		d.ranges[p] = a.Expr.Range()
		if !d.decodeExpr(a.Expr, &s) {
			d.failed[p] = true
			continue
		}
		out[name] = s
	}
	return out
}

func (d *decoder) job(b *hcl.Block) *structs.Job {
	j := &structs.Job{ID: b.Labels[0]}
	d.ranges[""] = b.DefRange
	d.ranges["id"] = b.LabelRanges[0]
	c := d.content(b.Body, jobSchema)

	d.attr(c, "", "name", &j.Name)
	d.attr(c, "", "namespace", &j.Namespace)
	d.attr(c, "", "region", &j.Region)
	d.attr(c, "", "datacenters", &j.Datacenters)
	d.attr(c, "", "node_pool", &j.NodePool)
	d.nonZero(c, "", "priority", &j.Priority)
	d.nonZero(c, "", "weight", &j.Weight)
	j.Meta = d.stringMap(d.single(c, "", "meta"), "meta")
	j.Constraints = d.constraints(c, "")
	j.Affinities = d.affinities(c, "")

	if tb := d.single(c, "", "training"); tb != nil {
		j.Training = d.training(tb, "training")
	}
	if eb := d.single(c, "", "elastic"); eb != nil {
		j.Elastic = d.elastic(eb, "elastic")
	}
	if wb := d.single(c, "", "worker"); wb != nil {
		j.Worker = d.role(wb, "worker")
	}
	if pb := d.single(c, "", "parameter_server"); pb != nil {
		j.ParameterServer = d.role(pb, "parameter_server")
	}
	return j
}

func (d *decoder) training(b *hcl.Block, path string) *structs.Training {
	t := &structs.Training{}
	c := d.content(b.Body, trainingSchema)
	d.attr(c, path, "framework", &t.Framework)
	d.attr(c, path, "architecture", &t.Architecture)
	d.attr(c, path, "launcher", &t.Launcher)
	d.attr(c, path, "mode", &t.Mode)
	d.nonZero(c, path, "global_batch_size", &t.GlobalBatchSize)
	d.nonZero(c, path, "steps_per_epoch", &t.StepsPerEpoch)
	if cb := d.single(c, path, "convergence"); cb != nil {
		p := join(path, "convergence")
		cc := d.content(cb.Body, convergenceSchema)
		t.Convergence = &structs.Convergence{}
		d.nonZero(cc, p, "threshold", &t.Convergence.Threshold)
		d.nonZero(cc, p, "patience", &t.Convergence.Patience)
		d.attr(cc, p, "max_epochs", &t.Convergence.MaxEpochs)
	}
	if bb := d.single(c, path, "batch_size"); bb != nil {
		p := join(path, "batch_size")
		bc := d.content(bb.Body, batchSizeSchema)
		t.BatchSize = &structs.BatchSize{}
		d.nonZero(bc, p, "min", &t.BatchSize.Min)
		d.nonZero(bc, p, "max", &t.BatchSize.Max)
		d.attr(bc, p, "min_local", &t.BatchSize.MinLocal)
		d.attr(bc, p, "max_local", &t.BatchSize.MaxLocal)
	}
	for i, sb := range c.Blocks.OfType("speed") {
		p := fmt.Sprintf("%s[%d]", join(path, "speed"), i)
		d.ranges[p] = sb.DefRange
		sc := d.content(sb.Body, speedSchema)
		sp := &structs.SpeedPrior{}
		d.attr(sc, p, "ps", &sp.PS)
		d.attr(sc, p, "workers", &sp.Workers)
		d.attr(sc, p, "steps_per_second", &sp.StepsPerSecond)
		t.Speeds = append(t.Speeds, sp)
	}
	return t
}

func (d *decoder) elastic(b *hcl.Block, path string) *structs.Elastic {
	e := &structs.Elastic{}
	c := d.content(b.Body, elasticSchema)
	if wb := d.single(c, path, "workers"); wb != nil {
		e.Workers = d.bounds(wb, join(path, "workers"))
	}
	if pb := d.single(c, path, "parameter_servers"); pb != nil {
		ps := d.bounds(pb, join(path, "parameter_servers"))
		e.ParameterServers = &ps
	}
	if cb := d.single(c, path, "checkpoint"); cb != nil {
		e.Checkpoint = d.checkpoint(cb, join(path, "checkpoint"))
	}
	return e
}

func (d *decoder) checkpoint(b *hcl.Block, path string) *structs.Checkpoint {
	c := d.content(b.Body, checkpointSchema)
	cp := &structs.Checkpoint{}
	d.attr(c, path, "signal", &cp.Signal)
	d.duration(c, path, "timeout", &cp.Timeout)
	d.duration(c, path, "interval", &cp.Interval)
	if p := join(path, "interval"); c.Attributes["interval"] != nil && !d.failed[p] && cp.Interval <= 0 {
		// 0 would mean no interval: written, it is a mistake.
		d.failed[p] = true
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid " + p,
			Detail:   fmt.Sprintf("%v must be a positive duration, such as \"10m\"; leave it out to checkpoint only when asked.", cp.Interval),
			Subject:  d.ranges[p].Ptr(),
		})
	}
	return cp
}

func (d *decoder) bounds(b *hcl.Block, path string) structs.Bounds {
	var out structs.Bounds
	c := d.content(b.Body, boundsSchema)
	d.nonZero(c, path, "min", &out.Min)
	d.nonZero(c, path, "max", &out.Max)
	return out
}

func (d *decoder) role(b *hcl.Block, path string) *structs.Role {
	return d.roleFrom(d.content(b.Body, roleSchema), path)
}

// roleFrom decodes a role template, or a Nomad task, from its content.
func (d *decoder) roleFrom(c *hcl.BodyContent, path string) *structs.Role {
	r := &structs.Role{}
	d.attr(c, path, "driver", &r.Driver)
	if cb := d.single(c, path, "config"); cb != nil {
		r.Config = d.anyMap(cb.Body, join(path, "config"))
	}
	r.Env = d.stringMap(d.single(c, path, "env"), join(path, "env"))
	r.Meta = d.stringMap(d.single(c, path, "meta"), join(path, "meta"))
	if rb := d.single(c, path, "resources"); rb != nil {
		r.Resources = d.resources(rb, join(path, "resources"))
	}
	r.Constraints = d.constraints(c, path)
	r.Affinities = d.affinities(c, path)
	return r
}

func (d *decoder) resources(b *hcl.Block, path string) *structs.Resources {
	r := &structs.Resources{}
	var c *hcl.BodyContent
	if d.nomad {
		c = d.partial(b.Body, resourcesSchema)
	} else {
		c = d.content(b.Body, resourcesSchema)
	}
	r.CPU, r.CPURange = d.size(c, path, "cpu", "MHz")
	r.MemoryMB, r.MemoryRange = d.size(c, path, "memory", "MB")
	for i, db := range c.Blocks.OfType("device") {
		p := fmt.Sprintf("%s[%d]", join(path, "device"), i)
		d.ranges[p] = db.DefRange
		d.ranges[join(p, "name")] = db.LabelRanges[0]
		dev := &structs.RequestedDevice{Name: db.Labels[0]}
		dc := d.content(db.Body, deviceSchema)
		d.nonZero(dc, p, "count", &dev.Count)
		dev.Constraints = d.constraints(dc, p)
		dev.Affinities = d.affinities(dc, p)
		r.Devices = append(r.Devices, dev)
	}
	return r
}

// Auto is the value of a cpu or memory that the algorithm sizes within the
// node.
const Auto = "auto"

// size decodes a role's cpu or memory in any of its forms: a number
// (fixed), "auto", an object { min, max, initial } or a block with those
// arguments. It returns the fixed size or the range, never both; zero and
// nil when the value is missing or wrong, with a diagnostic for the
// latter. unit names the unit in messages.
func (d *decoder) size(c *hcl.BodyContent, path, name, unit string) (int, *structs.ResourceRange) {
	p := join(path, name)
	a := c.Attributes[name]
	b := d.single(c, path, name)
	switch {
	case a != nil && b != nil:
		d.failed[p] = true
		d.errorf(b.DefRange, "Duplicate "+name, "%s is given both as an argument (at line %d) and as a block; give one.", p, a.Range.Start.Line)
		return 0, nil
	case b != nil:
		if d.nomad {
			d.nomadRange(b.DefRange, p)
			return 0, nil
		}
		return 0, d.rangeBody(d.content(b.Body, rangeSchema), p)
	case a == nil:
		return 0, nil
	}
	d.ranges[p] = a.Expr.Range()
	if pairs, diags := hcl.ExprMap(a.Expr); !diags.HasErrors() {
		if d.nomad {
			d.nomadRange(a.Expr.Range(), p)
			return 0, nil
		}
		return 0, d.rangePairs(pairs, p)
	}
	val, diags := a.Expr.Value(evalContextFor(d.ctx, a.Expr))
	if diags.HasErrors() || !val.IsWhollyKnown() {
		d.diags = append(d.diags, diags...)
		d.failed[p] = true
		return 0, nil
	}
	if val.Type() == cty.String && !val.IsNull() && !d.nomad {
		if val.AsString() == Auto {
			return 0, &structs.ResourceRange{Auto: true}
		}
		d.failed[p] = true
		d.errorf(a.Expr.Range(), "Invalid "+p, "%q is not a size; give a number of %s, %q, or a range: %s { min = ..., max = ... } on several lines, or %s = { min = ..., max = ... }.", val.AsString(), unit, Auto, name, name)
		return 0, nil
	}
	if val.Type().IsObjectType() || val.Type().IsMapType() {
		if d.nomad {
			d.nomadRange(a.Expr.Range(), p)
			return 0, nil
		}
		var m map[string]int
		if !d.decodeExpr(a.Expr, &m) {
			d.failed[p] = true
			return 0, nil
		}
		return 0, d.rangeMap(m, a.Expr.Range(), p)
	}
	var v int
	d.nonZero(c, path, name, &v)
	return v, nil
}

// rangeBody decodes a cpu or memory block.
func (d *decoder) rangeBody(c *hcl.BodyContent, path string) *structs.ResourceRange {
	r := &structs.ResourceRange{}
	d.nonZero(c, path, "min", &r.Min)
	d.nonZero(c, path, "max", &r.Max)
	d.nonZero(c, path, "initial", &r.Initial)
	return r
}

// rangeKeys are the arguments of a range, and where each goes.
var rangeKeys = map[string]func(*structs.ResourceRange) *int{
	"min":     func(r *structs.ResourceRange) *int { return &r.Min },
	"max":     func(r *structs.ResourceRange) *int { return &r.Max },
	"initial": func(r *structs.ResourceRange) *int { return &r.Initial },
}

// rangePairs decodes the object form written out, { min = 1000, max =
// 8000 }, pointing each error at its item.
func (d *decoder) rangePairs(pairs []hcl.KeyValuePair, path string) *structs.ResourceRange {
	r := &structs.ResourceRange{}
	for _, kv := range pairs {
		key := hcl.ExprAsKeyword(kv.Key)
		if key == "" {
			var s string
			if !d.decodeExpr(kv.Key, &s) {
				d.failed[path] = true
				continue
			}
			key = s
		}
		field, ok := rangeKeys[key]
		if !ok {
			d.failed[path] = true
			d.errorf(kv.Key.Range(), "Unsupported argument", "%s has no %q; a range takes min, max and initial.", path, key)
			continue
		}
		p := join(path, key)
		d.ranges[p] = kv.Value.Range()
		if !d.decodeExpr(kv.Value, field(r)) {
			d.failed[p] = true
			continue
		}
		if *field(r) == 0 {
			d.failed[p] = true
			d.errorf(kv.Value.Range(), "Invalid "+p, "%s must not be 0.", key)
		}
	}
	return r
}

// rangeMap decodes a range given as an object value, such as a variable.
func (d *decoder) rangeMap(m map[string]int, rng hcl.Range, path string) *structs.ResourceRange {
	r := &structs.ResourceRange{}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		field, ok := rangeKeys[key]
		if !ok {
			d.failed[path] = true
			d.errorf(rng, "Unsupported argument", "%s has no %q; a range takes min, max and initial.", path, key)
			continue
		}
		d.ranges[join(path, key)] = rng
		*field(r) = m[key]
	}
	return r
}

// nomadRange reports a range written in a Nomad task, which Nomad takes
// as a number only.
func (d *decoder) nomadRange(rng hcl.Range, path string) {
	d.failed[path] = true
	name := path[strings.LastIndex(path, ".")+1:]
	d.errorf(rng, "Range in a Nomad task", "A Nomad task's %s is a number. Give its range in the group's %s block instead: scaling { policy { %s { resources { %s { min = ... max = ... } } } } }, with the task's own value as the initial size.", name, NomadPolicy, NomadPolicy, name)
}

func (d *decoder) constraints(c *hcl.BodyContent, path string) []*structs.Constraint {
	var out []*structs.Constraint
	for i, b := range c.Blocks.OfType("constraint") {
		p := fmt.Sprintf("%s[%d]", join(path, "constraint"), i)
		d.ranges[p] = b.DefRange
		cc := d.content(b.Body, constraintSchema)
		con := &structs.Constraint{}
		d.attr(cc, p, "attribute", &con.LTarget)
		d.attr(cc, p, "operator", &con.Operand)
		d.attr(cc, p, "value", &con.RTarget)
		out = append(out, con)
	}
	return out
}

func (d *decoder) affinities(c *hcl.BodyContent, path string) []*structs.Affinity {
	var out []*structs.Affinity
	for i, b := range c.Blocks.OfType("affinity") {
		p := fmt.Sprintf("%s[%d]", join(path, "affinity"), i)
		d.ranges[p] = b.DefRange
		ac := d.content(b.Body, affinitySchema)
		a := &structs.Affinity{}
		d.attr(ac, p, "attribute", &a.LTarget)
		d.attr(ac, p, "operator", &a.Operand)
		d.attr(ac, p, "value", &a.RTarget)
		d.nonZero(ac, p, "weight", &a.Weight)
		out = append(out, a)
	}
	return out
}

// validation turns the FieldErrors of structs.Job.Validate into diagnostics
// at the range recorded for each field, or for its nearest enclosing block
// when the field was not written (a missing argument).
func (d *decoder) validation(err error) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, fe := range structs.FieldErrors(err) {
		if hcldiag.Failed(d.failed, fe.Path) {
			continue
		}
		rng := hcldiag.RangeFor(d.ranges, fe.Path)
		name := fe.Path[strings.LastIndexAny(fe.Path, ".]")+1:]
		diag := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng}
		if fe.Err == structs.ErrMissing {
			kind := "argument"
			if blockTypes[name] {
				kind = "block"
			}
			diag.Summary = "Missing required " + kind
			diag.Detail = fmt.Sprintf("The %s %q is required here.", kind, fe.Path)
		} else {
			diag.Summary = "Invalid " + fe.Path
			diag.Detail = hcldiag.UpperFirst(fe.Err.Error()) + "."
		}
		diags = append(diags, diag)
	}
	return diags
}
