package jobspec

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

// Group and task names a job gets in the Nomad format. A Nomad job file
// may name its groups and tasks anything: the caravan block's role says
// which is which.
const (
	nomadWorkerGroup = "worker"
	nomadWorkerTask  = "train"
	nomadPSGroup     = "ps"
	nomadPSTask      = "ps"
)

// jobWriters writes a job in each format.
var jobWriters = map[string]func(*writer, *hclwrite.Body, *structs.Job){
	FormatCaravan: (*writer).caravanJob,
	FormatNomad:   (*writer).nomadJob,
}

// FormatJob writes job as an HCL file in format, FormatCaravan or
// FormatNomad, that ParseAny reads back as job, apart from the fields the
// server sets and Job.Nomad. It writes from a canonicalized copy of job
// and leaves out what equals the default the parser fills in, except the
// training's architecture and mode. One thing differs by format: a PS
// job's parameter servers run the worker template when it has no
// parameter_server block, whereas a Nomad job's ps group has its own task;
// the Nomad format writes the worker's task there, and the Caravan format
// leaves out a parameter_server block equal to the worker block.
//
// Variables are not written: the job holds their values. It returns nil
// and error diagnostics when a value cannot be written in HCL, such as a
// map key that is not an identifier.
func FormatJob(job *structs.Job, format string) ([]byte, hcl.Diagnostics) {
	write, ok := jobWriters[format]
	if !ok {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unknown format",
			Detail:   fmt.Sprintf("%q is not a jobspec format; use %q or %q.", format, FormatCaravan, FormatNomad),
		}}
	}
	j := job.Copy()
	j.Canonicalize()
	w := &writer{}
	f := hclwrite.NewEmptyFile()
	write(w, f.Body(), j)
	if w.diags.HasErrors() {
		return nil, w.diags
	}
	return hclwrite.Format(f.Bytes()), w.diags
}

// writer writes a job's parts into HCL bodies and collects what it cannot
// write.
type writer struct {
	diags hcl.Diagnostics
	// nomad is set while writing the Nomad format.
	nomad bool
}

func (w *writer) errorf(summary, format string, args ...any) {
	w.diags = append(w.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
	})
}

// block appends a block to b, after a blank line unless it is the first
// thing in b.
func block(b *hclwrite.Body, typ string, labels ...string) *hclwrite.Body {
	if len(b.Attributes())+len(b.Blocks()) > 0 {
		b.AppendNewline()
	}
	return b.AppendNewBlock(typ, labels).Body()
}

func (w *writer) caravanJob(root *hclwrite.Body, j *structs.Job) {
	b := root.AppendNewBlock("job", []string{j.ID}).Body()
	w.jobAttrs(b, j)
	if j.Weight != structs.DefaultWeight {
		b.SetAttributeValue("weight", cty.NumberFloatVal(j.Weight))
	}
	w.jobBlocks(b, j)
	if j.Training != nil {
		w.training(block(b, "training"), j.Training)
	}
	if e := j.Elastic; e != nil {
		eb := block(b, "elastic")
		bounds(eb.AppendNewBlock("workers", nil).Body(), e.Workers)
		if ps := e.ParameterServers; ps != nil {
			bounds(eb.AppendNewBlock("parameter_servers", nil).Body(), *ps)
		}
		if checkpointed(e.Checkpoint) {
			w.checkpoint(eb.AppendNewBlock("checkpoint", nil).Body(), e.Checkpoint)
		}
	}
	if j.Worker != nil {
		w.role(block(b, "worker"), j.Worker, "worker")
	}
	if ps := j.ParameterServer; ps != nil && !sameTemplate(ps, j.Worker) {
		w.role(block(b, "parameter_server"), ps, "parameter_server")
	}
}

// sameTemplate reports whether two role templates run the same task,
// whatever their role.
func sameTemplate(a, b *structs.Role) bool {
	if a == nil || b == nil {
		return a == b
	}
	a, b = a.Copy(), b.Copy()
	a.Name, b.Name = "", ""
	return reflect.DeepEqual(a, b)
}

func (w *writer) nomadJob(root *hclwrite.Body, j *structs.Job) {
	w.nomad = true
	b := root.AppendNewBlock("job", []string{j.ID}).Body()
	b.SetAttributeValue("type", cty.StringVal(api.JobTypeBatch))
	w.jobAttrs(b, j)
	w.jobBlocks(b, j)

	var e structs.Elastic
	if j.Elastic != nil {
		e = *j.Elastic
	}
	policy := w.nomadGroup(b, nomadWorkerGroup, nomadWorkerTask, structs.RoleWorker, e.Workers, j.Worker)
	if j.Weight != structs.DefaultWeight {
		policy.SetAttributeValue("weight", cty.NumberFloatVal(j.Weight))
	}
	if j.Training != nil {
		w.training(block(policy, "training"), j.Training)
	}
	if checkpointed(e.Checkpoint) {
		w.checkpoint(block(policy, "checkpoint"), e.Checkpoint)
	}
	if e.ParameterServers != nil {
		ps := j.ParameterServer
		if ps == nil {
			ps = j.Worker
		}
		w.nomadGroup(b, nomadPSGroup, nomadPSTask, structs.RolePS, *e.ParameterServers, ps)
	}
}

// rolePaths are the jobspec paths of the roles, for errors.
var rolePaths = map[string]string{structs.RoleWorker: "worker", structs.RolePS: "parameter_server"}

// nomadGroup writes a group of one role, scaled within bnd, with one task
// from template r, and returns the body of its caravan block.
func (w *writer) nomadGroup(b *hclwrite.Body, group, task, role string, bnd structs.Bounds, r *structs.Role) *hclwrite.Body {
	g := block(b, "group", group)
	s := g.AppendNewBlock("scaling", nil).Body()
	bounds(s, bnd)
	policy := block(s, "policy").AppendNewBlock(NomadPolicy, nil).Body()
	policy.SetAttributeValue("role", cty.StringVal(role))
	if r != nil {
		policyRanges(policy, r.Resources)
		w.role(block(g, "task", task), r, rolePaths[role])
	}
	return policy
}

// jobAttrs writes the job's arguments that both formats share.
func (w *writer) jobAttrs(b *hclwrite.Body, j *structs.Job) {
	if j.Name != j.ID {
		b.SetAttributeValue("name", cty.StringVal(j.Name))
	}
	if j.Namespace != structs.DefaultNamespace {
		b.SetAttributeValue("namespace", cty.StringVal(j.Namespace))
	}
	if j.Region != "" {
		b.SetAttributeValue("region", cty.StringVal(j.Region))
	}
	if !slices.Equal(j.Datacenters, []string{"*"}) {
		b.SetAttributeRaw("datacenters", w.tokens(goStrings(j.Datacenters), "datacenters"))
	}
	if j.NodePool != "" {
		b.SetAttributeValue("node_pool", cty.StringVal(j.NodePool))
	}
	if j.Priority != structs.DefaultPriority {
		b.SetAttributeValue("priority", cty.NumberIntVal(int64(j.Priority)))
	}
}

// jobBlocks writes the job's meta, constraint and affinity blocks.
func (w *writer) jobBlocks(b *hclwrite.Body, j *structs.Job) {
	w.stringMap(b, "meta", j.Meta, "")
	w.rules(b, j.Constraints, j.Affinities)
}

func (w *writer) training(b *hclwrite.Body, t *structs.Training) {
	if t.Framework != "" {
		b.SetAttributeValue("framework", cty.StringVal(t.Framework))
	}
	b.SetAttributeValue("architecture", cty.StringVal(t.Architecture))
	if t.Launcher != structs.LauncherNone {
		b.SetAttributeValue("launcher", cty.StringVal(t.Launcher))
	}
	b.SetAttributeValue("mode", cty.StringVal(t.Mode))
	b.SetAttributeValue("global_batch_size", cty.NumberIntVal(int64(t.GlobalBatchSize)))
	b.SetAttributeValue("steps_per_epoch", cty.NumberIntVal(int64(t.StepsPerEpoch)))
	if c := t.Convergence; c != nil && (c.Threshold != structs.DefaultThreshold || c.Patience != structs.DefaultPatience || c.MaxEpochs != 0) {
		cb := block(b, "convergence")
		if c.Threshold != structs.DefaultThreshold {
			cb.SetAttributeValue("threshold", cty.NumberFloatVal(c.Threshold))
		}
		if c.Patience != structs.DefaultPatience {
			cb.SetAttributeValue("patience", cty.NumberIntVal(int64(c.Patience)))
		}
		if c.MaxEpochs != 0 {
			cb.SetAttributeValue("max_epochs", cty.NumberIntVal(int64(c.MaxEpochs)))
		}
	}
	if bs := t.BatchSize; bs != nil {
		bb := block(b, "batch_size")
		bb.SetAttributeValue("min", cty.NumberIntVal(int64(bs.Min)))
		bb.SetAttributeValue("max", cty.NumberIntVal(int64(bs.Max)))
		if bs.MinLocal != 0 {
			bb.SetAttributeValue("min_local", cty.NumberIntVal(int64(bs.MinLocal)))
		}
		if bs.MaxLocal != 0 {
			bb.SetAttributeValue("max_local", cty.NumberIntVal(int64(bs.MaxLocal)))
		}
	}
	for _, sp := range t.Speeds {
		sb := block(b, "speed")
		if sp.PS != 0 {
			sb.SetAttributeValue("ps", cty.NumberIntVal(int64(sp.PS)))
		}
		sb.SetAttributeValue("workers", cty.NumberIntVal(int64(sp.Workers)))
		sb.SetAttributeValue("steps_per_second", cty.NumberFloatVal(sp.StepsPerSecond))
	}
}

func bounds(b *hclwrite.Body, bnd structs.Bounds) {
	b.SetAttributeValue("min", cty.NumberIntVal(int64(bnd.Min)))
	b.SetAttributeValue("max", cty.NumberIntVal(int64(bnd.Max)))
}

// checkpointed reports whether c differs from the default checkpoint, so
// that it needs a block.
func checkpointed(c *structs.Checkpoint) bool {
	return c != nil && (c.Signal != structs.DefaultCheckpointSignal || c.Timeout != structs.DefaultCheckpointTimeout || c.Interval != 0)
}

func (w *writer) checkpoint(b *hclwrite.Body, c *structs.Checkpoint) {
	if c.Signal != structs.DefaultCheckpointSignal {
		b.SetAttributeValue("signal", cty.StringVal(c.Signal))
	}
	if c.Timeout != structs.DefaultCheckpointTimeout {
		b.SetAttributeValue("timeout", cty.StringVal(formatDuration(c.Timeout)))
	}
	if c.Interval != 0 {
		b.SetAttributeValue("interval", cty.StringVal(formatDuration(c.Interval)))
	}
}

// formatDuration writes d as a Go duration without zero units: "2m", not
// "2m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// role writes a role template's body: a jobspec's worker block, or a
// Nomad task. path is its jobspec path, for errors.
func (w *writer) role(b *hclwrite.Body, r *structs.Role, path string) {
	b.SetAttributeValue("driver", cty.StringVal(r.Driver))
	if len(r.Config) > 0 {
		w.anyBody(block(b, "config"), r.Config, join(path, "config"))
	}
	w.stringMap(b, "env", r.Env, path)
	w.stringMap(b, "meta", r.Meta, path)
	if res := r.Resources; res != nil {
		rb := block(b, "resources")
		if w.nomad {
			// A Nomad task's sizes are numbers; the ranges go in the
			// group's caravan block (policyRanges).
			rb.SetAttributeValue("cpu", cty.NumberIntVal(int64(res.CPU)))
			rb.SetAttributeValue("memory", cty.NumberIntVal(int64(res.MemoryMB)))
		} else {
			writeSize(rb, "cpu", res.CPU, res.CPURange, structs.DefaultCPU, true, false)
			writeSize(rb, "memory", res.MemoryMB, res.MemoryRange, structs.DefaultMemoryMB, false, false)
		}
		for _, d := range res.Devices {
			db := block(rb, "device", d.Name)
			db.SetAttributeValue("count", cty.NumberIntVal(int64(d.Count)))
			w.rules(db, d.Constraints, d.Affinities)
		}
	}
	w.rules(b, r.Constraints, r.Affinities)
}

// writeSize writes a cpu or memory: a number when fixed, "auto", or a
// block with the range's bounds, and its initial size where it is not
// what the parser would default to. def is the resource's task default
// and initialMax says whether a bounded range starts at its max.
// initialGiven is set where the initial size is written elsewhere (a
// Nomad task's own cpu), so the range leaves it out.
func writeSize(b *hclwrite.Body, name string, size int, r *structs.ResourceRange, def int, initialMax, initialGiven bool) {
	if r == nil {
		b.SetAttributeValue(name, cty.NumberIntVal(int64(size)))
		return
	}
	defInitial := r.Min
	switch {
	case r.Max == 0:
		defInitial = max(def, r.Min)
	case initialMax:
		defInitial = r.Max
	}
	if r.Auto && (initialGiven || r.Initial == defInitial) && r.Min == minSize[name] {
		b.SetAttributeValue(name, cty.StringVal(Auto))
		return
	}
	rb := block(b, name)
	rb.SetAttributeValue("min", cty.NumberIntVal(int64(r.Min)))
	if r.Max != 0 {
		rb.SetAttributeValue("max", cty.NumberIntVal(int64(r.Max)))
	}
	if !initialGiven && r.Initial != defInitial {
		rb.SetAttributeValue("initial", cty.NumberIntVal(int64(r.Initial)))
	}
}

// minSize is Nomad's minimum of each size, the min of "auto".
var minSize = map[string]int{"cpu": structs.MinCPU, "memory": structs.MinMemoryMB}

// policyRanges writes a role's ranges into its group's caravan block in
// the Nomad format; the task's own cpu and memory are their initial
// sizes.
func policyRanges(policy *hclwrite.Body, res *structs.Resources) {
	if res == nil || !res.Ranged() {
		return
	}
	rb := block(policy, "resources")
	if res.CPURange != nil {
		writeSize(rb, "cpu", res.CPU, res.CPURange, structs.DefaultCPU, true, true)
	}
	if res.MemoryRange != nil {
		writeSize(rb, "memory", res.MemoryMB, res.MemoryRange, structs.DefaultMemoryMB, false, true)
	}
}

// rules writes constraint and affinity blocks.
func (w *writer) rules(b *hclwrite.Body, cs []*structs.Constraint, as []*structs.Affinity) {
	for _, c := range cs {
		cb := block(b, "constraint")
		w.rule(cb, c.LTarget, c.Operand, c.RTarget)
	}
	for _, a := range as {
		ab := block(b, "affinity")
		w.rule(ab, a.LTarget, a.Operand, a.RTarget)
		ab.SetAttributeValue("weight", cty.NumberIntVal(int64(a.Weight)))
	}
}

func (w *writer) rule(b *hclwrite.Body, attribute, operator, value string) {
	if attribute != "" {
		b.SetAttributeRaw("attribute", w.tokens(attribute, "attribute"))
	}
	if operator != structs.OpEqual {
		b.SetAttributeValue("operator", cty.StringVal(operator))
	}
	if value != "" {
		b.SetAttributeRaw("value", w.tokens(value, "value"))
	}
}

// stringMap writes a block of `key = "value"` lines, such as env or meta;
// nothing when m is empty.
func (w *writer) stringMap(b *hclwrite.Body, typ string, m map[string]string, path string) {
	if len(m) == 0 {
		return
	}
	mb := block(b, typ)
	path = join(path, typ)
	for _, k := range sortedKeys(m) {
		if !hclsyntax.ValidIdentifier(k) {
			w.errorf("Unwritable key", "%s: key %q is not an HCL identifier, which an argument name needs.", path, k)
			continue
		}
		mb.SetAttributeRaw(k, w.tokens(m[k], join(path, k)))
	}
}

// configFirst are the driver config arguments written first, as jobspecs
// usually have them; the others follow in alphabetical order.
var configFirst = []string{"image", "command"}

// anyBody writes a driver config as the decoder reads it (see anyMap): a
// list whose elements are all maps is written as repeated blocks (docker's
// mount), anything else as an argument.
func (w *writer) anyBody(b *hclwrite.Body, m map[string]any, path string) {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool {
		return firstIndex(keys[i]) < firstIndex(keys[j])
	})
	var nested []string
	for _, k := range keys {
		if !hclsyntax.ValidIdentifier(k) {
			w.errorf("Unwritable key", "%s: key %q is not an HCL identifier, which an argument name needs.", path, k)
			continue
		}
		if _, ok := blockList(m[k]); ok {
			nested = append(nested, k)
			continue
		}
		b.SetAttributeRaw(k, w.tokens(m[k], join(path, k)))
	}
	for _, k := range nested {
		list, _ := blockList(m[k])
		for _, elem := range list {
			w.anyBody(block(b, k), elem, join(path, k))
		}
	}
}

func firstIndex(k string) int {
	if i := slices.Index(configFirst, k); i >= 0 {
		return i
	}
	return len(configFirst)
}

// blockList returns v as a list of maps when it is a non-empty one.
func blockList(v any) ([]map[string]any, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := make([]map[string]any, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		out[i] = m
	}
	return out, true
}

// tokens returns the HCL expression of a plain Go value at path (string, numbers,
// bool, []any, []string, map[string]any or nil). Runtime interpolations in
// strings (${attr.kernel.name}, ${CARAVAN_RANK}) stay interpolations, which
// the parser keeps verbatim, rather than being escaped.
func (w *writer) tokens(v any, path string) hclwrite.Tokens {
	cv, err := goToCty(v)
	if err != nil {
		w.errorf("Unwritable value", "%s: %v.", path, err)
		return nil
	}
	toks := hclwrite.TokensForValue(cv)
	for _, t := range toks {
		if t.Type == hclsyntax.TokenQuotedLit {
			t.Bytes = unescapeRuntime(t.Bytes)
		}
	}
	return toks
}

func goStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// goToCty converts the values anyMap makes back into cty values.
func goToCty(v any) (cty.Value, error) {
	switch v := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case string:
		return cty.StringVal(v), nil
	case bool:
		return cty.BoolVal(v), nil
	case int:
		return cty.NumberIntVal(int64(v)), nil
	case int64:
		return cty.NumberIntVal(v), nil
	case float64:
		return cty.NumberFloatVal(v), nil
	case []string:
		return goToCty(goStrings(v))
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal, nil
		}
		elems := make([]cty.Value, len(v))
		for i, e := range v {
			cv, err := goToCty(e)
			if err != nil {
				return cty.NilVal, err
			}
			elems[i] = cv
		}
		return cty.TupleVal(elems), nil
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal, nil
		}
		attrs := make(map[string]cty.Value, len(v))
		for k, e := range v {
			cv, err := goToCty(e)
			if err != nil {
				return cty.NilVal, err
			}
			attrs[k] = cv
		}
		return cty.ObjectVal(attrs), nil
	}
	return cty.NilVal, fmt.Errorf("values of Go type %T cannot be written", v)
}

// unescapeRuntime turns the escaped "$${root.a.b}" that hclwrite writes
// for the text "${root.a.b}" back into an interpolation where root is a
// Nomad runtime value (see runtimeRoot). A "$${" that follows another "$"
// was a literal "$${" in the text and stays escaped.
func unescapeRuntime(lit []byte) []byte {
	s := string(lit)
	var b strings.Builder
	for {
		i := strings.Index(s, "$${")
		if i < 0 {
			b.WriteString(s)
			return []byte(b.String())
		}
		end := strings.IndexByte(s[i:], '}')
		escaped := i > 0 && s[i-1] == '$'
		if end < 0 || escaped || !runtimeReference(s[i+3:i+end]) {
			b.WriteString(s[:i+3])
			s = s[i+3:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(s[i+1 : i+end+1])
		s = s[i+end+1:]
	}
}

// runtimeReference reports whether ref, the inside of a "${...}", is a
// dotted reference to a Nomad runtime value: node.unique.id,
// attr.kernel.name, NOMAD_ALLOC_ID.
func runtimeReference(ref string) bool {
	parts := strings.Split(ref, ".")
	for _, p := range parts {
		if !hclsyntax.ValidIdentifier(p) {
			return false
		}
	}
	return runtimeRoot(parts[0])
}
