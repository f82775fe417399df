package jobspec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/hashicorp/nomad/api"
)

// The Nomad format is an ordinary Nomad job file whose groups carry
// Caravan's block in their scaling policy, which Nomad keeps as it is
// (nomad-autoscaler reads its own policies from the same place):
//
//	job "resnet50" {
//	  type = "batch"
//	  group "worker" {
//	    scaling {
//	      min = 1
//	      max = 32
//	      policy {
//	        caravan {
//	          role = "worker"
//	          training { ... }   # as in a Caravan jobspec
//	          checkpoint { ... } # as elastic.checkpoint
//	          weight = 2         # optional, as the job's weight
//	        }
//	      }
//	    }
//	    task "train" { ... }
//	  }
//	  group "ps" { scaling { ... policy { caravan { role = "ps" } } } ... }
//	}
//
// The worker group's scaling min and max are elastic.workers, the ps
// group's elastic.parameter_servers; its tasks are the role's template.
// Everything Nomad knows besides is kept: Caravan runs such a job as
// versions of the Nomad job itself (see drivers/nomad).

// Formats of a jobspec file.
const (
	// FormatCaravan is Caravan's own jobspec (DESIGN.md §2).
	FormatCaravan = "caravan"
	// FormatNomad is a Nomad job file with caravan scaling policies.
	FormatNomad = "nomad"
)

// NomadPolicy is the name of Caravan's block in a group's scaling policy.
const NomadPolicy = "caravan"

var (
	nomadJobSchema = &hcl.BodySchema{
		Attributes: attrs("name", "namespace", "region", "datacenters", "node_pool", "priority", "type"),
		Blocks: append(blocks("meta", "constraint", "affinity", "periodic", "parameterized"),
			hcl.BlockHeaderSchema{Type: "group", LabelNames: []string{"name"}}),
	}
	nomadGroupSchema = &hcl.BodySchema{
		Attributes: attrs("count"),
		Blocks: append(blocks("meta", "constraint", "affinity", "scaling"),
			hcl.BlockHeaderSchema{Type: "task", LabelNames: []string{"name"}}),
	}
	nomadScalingSchema = &hcl.BodySchema{Attributes: attrs("min", "max"), Blocks: blocks("policy")}
	nomadPolicySchema  = &hcl.BodySchema{Blocks: blocks(NomadPolicy)}
	nomadTaskSchema    = &hcl.BodySchema{
		Attributes: roleSchema.Attributes,
		Blocks:     append(slices.Clone(roleSchema.Blocks), blocks("lifecycle")...),
	}
	caravanSchema = &hcl.BodySchema{
		Attributes: attrs("role", "weight"),
		Blocks:     blocks("training", "checkpoint", "resources"),
	}
	// policyResourcesSchema is the caravan block's resources: the ranges
	// of the group's cpu and memory, whose task gives the initial size.
	policyResourcesSchema = &hcl.BodySchema{Attributes: attrs("cpu", "memory"), Blocks: blocks("cpu", "memory")}
)

// nomadGroup is what Caravan reads of one group of a Nomad job, from a
// file or from Nomad's API.
type nomadGroup struct {
	name string
	// rng is where the group is defined.
	rng hcl.Range
	// policy is the group's caravan block, nil when it has none.
	policy *hcl.Block
	// count, min and max are the group's count and scaling bounds; a nil
	// bound was not given.
	count    int
	min, max *int
	// minRange and maxRange are where the bounds are written.
	minRange, maxRange hcl.Range
	// role is the template its tasks make up (see mergeTasks);
	// taskPath is the decoder path of its main task in a file.
	role     *structs.Role
	taskPath string
	// cpuRange and memoryRange are the ranges of the caravan block's
	// resources, nil when it gives none.
	cpuRange, memoryRange *structs.ResourceRange
}

// partial decodes what schema names of body and leaves the rest, which
// is Nomad's to check.
func (d *decoder) partial(body hcl.Body, schema *hcl.BodySchema) *hcl.BodyContent {
	c, _, diags := body.PartialContent(schema)
	d.diags = append(d.diags, diags...)
	return c
}

// nomadJob decodes a Nomad job block. Only what Caravan uses is read and
// checked; the rest of the file is Nomad's (nomad job validate).
func (d *decoder) nomadJob(b *hcl.Block) *structs.Job {
	d.nomad = true
	j := &structs.Job{ID: b.Labels[0]}
	d.ranges[""] = b.DefRange
	d.ranges["id"] = b.LabelRanges[0]
	c := d.partial(b.Body, nomadJobSchema)
	d.attr(c, "", "name", &j.Name)
	d.attr(c, "", "namespace", &j.Namespace)
	d.attr(c, "", "region", &j.Region)
	d.attr(c, "", "datacenters", &j.Datacenters)
	d.attr(c, "", "node_pool", &j.NodePool)
	d.nonZero(c, "", "priority", &j.Priority)
	typ := "service" // Nomad's default
	rng := b.DefRange
	if a := c.Attributes["type"]; a != nil {
		rng = a.Expr.Range()
		d.decodeExpr(a.Expr, &typ)
	}
	d.batchOnly(typ, rng)
	for _, kind := range []string{"periodic", "parameterized"} {
		if pb := d.single(c, "", kind); pb != nil {
			d.errorf(pb.DefRange, "Unsupported "+kind+" job", "Caravan runs each job once; a %s job launches others, which Caravan would not manage.", kind)
		}
	}
	j.Meta = d.stringMap(d.single(c, "", "meta"), "meta")
	j.Constraints = d.constraints(c, "")
	j.Affinities = d.affinities(c, "")

	var groups []*nomadGroup
	for _, gb := range c.Blocks.OfType("group") {
		groups = append(groups, d.nomadGroupBlock(gb))
	}
	d.assemble(j, groups, b.DefRange)
	return j
}

// nomadGroupBlock decodes a group block of a Nomad job file.
func (d *decoder) nomadGroupBlock(b *hcl.Block) *nomadGroup {
	g := &nomadGroup{name: b.Labels[0], rng: b.DefRange, count: -1}
	path := "group[" + strconv.Quote(g.name) + "]"
	c := d.partial(b.Body, nomadGroupSchema)
	d.attr(c, path, "count", &g.count)
	if sb := d.single(c, path, "scaling"); sb != nil {
		sc := d.partial(sb.Body, nomadScalingSchema)
		g.min, g.minRange = d.bound(sc, "min")
		g.max, g.maxRange = d.bound(sc, "max")
		if pb := d.single(sc, path, "policy"); pb != nil {
			g.policy = d.single(d.partial(pb.Body, nomadPolicySchema), path, NomadPolicy)
		}
	}
	meta := d.stringMap(d.single(c, path, "meta"), join(path, "meta"))
	var tasks []*structs.Role
	var lifecycle []bool
	var paths []string
	for _, tb := range c.Blocks.OfType("task") {
		tpath := join(path, "task["+strconv.Quote(tb.Labels[0])+"]")
		tc := d.partial(tb.Body, nomadTaskSchema)
		tasks = append(tasks, d.roleFrom(tc, tpath))
		lifecycle = append(lifecycle, len(tc.Blocks.OfType("lifecycle")) > 0)
		paths = append(paths, tpath)
	}
	main := mainTask(lifecycle)
	g.role = mergeTasks(tasks, main)
	if len(paths) > 0 {
		g.taskPath = paths[main]
	}
	if g.role != nil {
		g.role.Meta = mergeMeta(meta, g.role.Meta)
		g.role.Constraints = append(d.constraints(c, path), g.role.Constraints...)
		g.role.Affinities = append(d.affinities(c, path), g.role.Affinities...)
	}
	return g
}

// bound decodes a scaling bound: nil when it is not given or not a
// number, and where it is written.
func (d *decoder) bound(c *hcl.BodyContent, name string) (*int, hcl.Range) {
	a := c.Attributes[name]
	if a == nil {
		return nil, hcl.Range{}
	}
	var v int
	if !d.decodeExpr(a.Expr, &v) {
		return nil, a.Expr.Range()
	}
	return &v, a.Expr.Range()
}

// mainTask returns the index of a group's trainer: its first task
// without a lifecycle, else its first task.
func mainTask(lifecycle []bool) int {
	for i, lc := range lifecycle {
		if !lc {
			return i
		}
	}
	return 0
}

// mergeTasks makes one role template of a group's tasks: the main task
// gives driver, config and environment, and the resources of all tasks
// add up, as Nomad reserves them. Nil when the group has no task.
func mergeTasks(tasks []*structs.Role, main int) *structs.Role {
	if len(tasks) == 0 {
		return nil
	}
	r := tasks[main].Copy()
	if r.Resources == nil {
		r.Resources = &structs.Resources{}
	}
	for i, t := range tasks {
		if i == main {
			continue
		}
		res := t.Resources
		if res == nil {
			res = &structs.Resources{} // Nomad's defaults
		}
		r.Resources.CPU += cmp.Or(res.CPU, structs.DefaultCPU)
		r.Resources.MemoryMB += cmp.Or(res.MemoryMB, structs.DefaultMemoryMB)
		r.Resources.Devices = append(r.Resources.Devices, res.Devices...)
	}
	return r
}

// mergeMeta returns group meta overlaid with task meta, as Nomad
// interpolates ${NOMAD_META_*}.
func mergeMeta(group, task map[string]string) map[string]string {
	if len(group) == 0 {
		return task
	}
	out := maps.Clone(group)
	maps.Copy(out, task)
	return out
}

// assemble makes j of its Nomad groups: each needs a caravan block naming
// its role, exactly one is the worker group and at most one the ps group.
// The worker group's block holds the job's training, checkpoint and
// weight; the groups' scaling bounds are the elastic bounds.
func (d *decoder) assemble(j *structs.Job, groups []*nomadGroup, jobRange hcl.Range) {
	byRole := map[string]*nomadGroup{}
	var policies int
	for _, g := range groups {
		if g.policy != nil {
			policies++
		}
	}
	if policies == 0 {
		d.errorf(jobRange, "No caravan scaling policy", "No group of job %q has a %s block in its scaling policy, so Caravan has nothing to run; add one to the worker group: scaling { policy { %s { role = \"worker\" ... } } }.", j.ID, NomadPolicy, NomadPolicy)
		for _, p := range []string{"training", "elastic", structs.RoleWorker} {
			d.failed[p] = true
		}
		return
	}
	j.Nomad = &structs.NomadSource{Groups: map[string]string{}}
	for _, g := range groups {
		if g.policy == nil {
			d.errorf(g.rng, "Group without a caravan policy", "Group %q has no %s block in its scaling policy. Caravan runs every group of the job, so each needs one, with role = \"worker\" or \"ps\".", g.name, NomadPolicy)
			continue
		}
		role := d.caravan(j, g)
		if role == "" {
			continue
		}
		if prev := byRole[role]; prev != nil {
			d.errorf(g.policy.DefRange, "Duplicate role", "Groups %q and %q both have role %q; a job has one group per role.", prev.name, g.name, role)
			continue
		}
		byRole[role] = g
		j.Nomad.Groups[role] = g.name
	}
	// The groups are Caravan's own bookkeeping, checked here.
	d.failed["nomad"] = true
	w, ps := byRole[structs.RoleWorker], byRole[structs.RolePS]
	if w == nil {
		if !d.diags.HasErrors() {
			d.errorf(jobRange, "No worker group", "No group's %s block has role = \"worker\"; a job needs one.", NomadPolicy)
		}
		for _, p := range []string{"training", "elastic", structs.RoleWorker} {
			d.failed[p] = true // what the worker group would give
		}
		return
	}
	d.ranges["training"] = w.policy.DefRange
	d.ranges["elastic"] = w.rng
	if ps != nil && j.Training != nil && j.Training.Architecture == structs.ArchitectureAllReduce {
		d.errorf(ps.policy.DefRange, "Parameter servers in an allreduce job", "Group %q has role \"ps\", but the job's training.architecture is \"allreduce\", which has no parameter servers; remove the group or set architecture = \"ps\".", ps.name)
		ps = nil
	}
	if j.Elastic == nil {
		j.Elastic = &structs.Elastic{}
	}
	j.Elastic.Workers = d.groupBounds(w, "elastic.workers")
	j.Worker = w.role
	w.setRanges()
	d.roleRanges(w, structs.RoleWorker)
	if w.role == nil {
		d.errorf(w.rng, "Missing task", "Group %q has no task to run as the worker.", w.name)
	}
	if ps != nil {
		b := d.groupBounds(ps, "elastic.parameter_servers")
		j.Elastic.ParameterServers = &b
		j.ParameterServer = ps.role
		ps.setRanges()
		d.roleRanges(ps, "parameter_server")
		if ps.role == nil {
			d.errorf(ps.rng, "Missing task", "Group %q has no task to run as the parameter server.", ps.name)
		}
	}
}

// setRanges puts the caravan block's ranges on the group's role, whose
// tasks' sum is then their initial size.
func (g *nomadGroup) setRanges() {
	if g.role == nil || g.cpuRange == nil && g.memoryRange == nil {
		return
	}
	if g.role.Resources == nil {
		g.role.Resources = &structs.Resources{}
	}
	g.role.Resources.CPURange, g.role.Resources.MemoryRange = g.cpuRange, g.memoryRange
}

// roleRanges makes the jobspec paths of a role's template ("worker",
// "worker.resources.cpu") point where its group and main task define
// them, for validation errors.
func (d *decoder) roleRanges(g *nomadGroup, role string) {
	d.ranges[role] = g.rng
	if g.taskPath == "" {
		return
	}
	for p, rng := range d.ranges {
		if rest, ok := strings.CutPrefix(p, g.taskPath); ok {
			d.ranges[role+rest] = rng
		}
	}
	for p := range d.failed {
		if rest, ok := strings.CutPrefix(p, g.taskPath); ok {
			d.failed[role+rest] = true
		}
	}
}

// groupBounds returns a group's scaling bounds as an elastic range and
// records where they are, under path. Like Nomad, a missing min is the
// group's count (default 1).
func (d *decoder) groupBounds(g *nomadGroup, path string) structs.Bounds {
	var b structs.Bounds
	d.ranges[path] = g.rng
	switch {
	case g.min != nil:
		b.Min = *g.min
		d.ranges[path+".min"] = g.minRange
	case g.count >= 0:
		b.Min = g.count
	default:
		b.Min = 1
	}
	if g.min != nil && b.Min < 1 {
		d.errorf(g.minRange, "Invalid scaling min", "Group %q has min = %d; Caravan runs at least one task of each role, so min must be at least 1.", g.name, b.Min)
	}
	if g.max != nil {
		b.Max = *g.max
		d.ranges[path+".max"] = g.maxRange
		if b.Max < 1 {
			d.errorf(g.maxRange, "Invalid scaling max", "Group %q has max = %d; it must be at least 1.", g.name, b.Max)
		}
	} else {
		d.errorf(g.rng, "Missing scaling max", "Group %q needs a max in its scaling block: the most tasks Caravan may give it.", g.name)
	}
	return b
}

// caravan decodes a group's caravan block and returns its role, "" when
// it has none.
func (d *decoder) caravan(j *structs.Job, g *nomadGroup) string {
	c := d.content(g.policy.Body, caravanSchema)
	var role string
	a := c.Attributes["role"]
	switch {
	case a == nil:
		d.errorf(g.policy.DefRange, "Missing required argument", "The %s block of group %q needs a role: \"worker\" or \"ps\".", NomadPolicy, g.name)
		return ""
	case !d.decodeExpr(a.Expr, &role):
		return ""
	case role != structs.RoleWorker && role != structs.RolePS:
		d.errorf(a.Expr.Range(), "Invalid role", "%q is not a role; use \"worker\" or \"ps\".", role)
		return ""
	}
	if rb := d.single(c, "", "resources"); rb != nil {
		g.cpuRange, g.memoryRange = d.policyResources(rb, rolePaths[role]+".resources")
	}
	if role == structs.RolePS {
		for _, name := range []string{"training", "checkpoint", "weight"} {
			if rng, ok := present(c, name); ok {
				d.errorf(rng, "Misplaced "+name, "The ps group's %s block has a role only; %s belongs in the worker group's.", NomadPolicy, name)
			}
		}
		return role
	}
	d.nonZero(c, "", "weight", &j.Weight)
	if tb := d.single(c, "", "training"); tb != nil {
		j.Training = d.training(tb, "training")
	}
	if cb := d.single(c, "elastic", "checkpoint"); cb != nil {
		j.Elastic = &structs.Elastic{Checkpoint: d.checkpoint(cb, "elastic.checkpoint")}
	}
	return role
}

// policyResources decodes the resources block of a caravan policy: ranges
// or "auto" for the group's cpu and memory, under path ("worker.resources").
// A fixed number is the task's to give.
func (d *decoder) policyResources(b *hcl.Block, path string) (cpu, memory *structs.ResourceRange) {
	nomad := d.nomad
	d.nomad = false
	defer func() { d.nomad = nomad }()
	c := d.content(b.Body, policyResourcesSchema)
	ranged := func(name, unit string) *structs.ResourceRange {
		fixed, r := d.size(c, path, name, unit)
		if fixed != 0 {
			p := join(path, name)
			d.failed[p] = true
			d.errorf(d.ranges[p], "Fixed "+name+" in a policy", "The %s block's resources give ranges only (%s { min = ..., max = ... } or %q); a fixed %s is the task's own.", NomadPolicy, name, Auto, name)
		}
		return r
	}
	return ranged("cpu", "MHz"), ranged("memory", "MB")
}

// present returns where content c defines name, as an attribute or a
// block.
func present(c *hcl.BodyContent, name string) (hcl.Range, bool) {
	if a := c.Attributes[name]; a != nil {
		return a.Range, true
	}
	if bs := c.Blocks.OfType(name); len(bs) > 0 {
		return bs[0].DefRange, true
	}
	return hcl.Range{}, false
}

func (d *decoder) batchOnly(typ string, rng hcl.Range) {
	if typ != api.JobTypeBatch {
		d.errorf(rng, "Not a batch job", "Job type %q: Caravan runs training jobs, which end, as Nomad batch jobs; set type = \"batch\".", typ)
	}
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

// FromNomad returns the Caravan job a Nomad job declares, as Nomad's API
// returns it: the job with the Nomad job as its template (Job.Nomad), or
// nil and diagnostics saying what is wrong. Positions in the diagnostics
// are within the group's policy as JSON, named "<job>/<group> policy";
// nj has been canonicalized by Nomad. A job none of whose groups has a
// caravan policy is not Caravan's: see HasPolicy.
func FromNomad(nj *api.Job) (*structs.Job, hcl.Diagnostics) {
	d := newDecoder(newEvalContext(nil, newBudget()))
	id := deref(nj.ID)
	j := &structs.Job{
		ID:          id,
		Name:        deref(nj.Name),
		Namespace:   deref(nj.Namespace),
		Region:      deref(nj.Region),
		Datacenters: slices.Clone(nj.Datacenters),
		NodePool:    deref(nj.NodePool),
		Priority:    deref(nj.Priority),
		Meta:        maps.Clone(nj.Meta),
		Constraints: fromConstraints(nj.Constraints),
		Affinities:  fromAffinities(nj.Affinities),
	}
	jobRange := hcl.Range{Filename: id}
	d.batchOnly(deref(nj.Type), jobRange)
	if nj.IsPeriodic() || nj.IsParameterized() {
		d.errorf(jobRange, "Unsupported job", "Caravan runs each job once; a periodic or parameterized job launches others, which Caravan would not manage.")
	}
	var groups []*nomadGroup
	for _, tg := range nj.TaskGroups {
		groups = append(groups, d.apiGroup(id, tg))
	}
	d.assemble(j, groups, jobRange)
	j.Canonicalize()
	d.diags = append(d.diags, d.validation(j.Validate())...)
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	template, err := Template(nj)
	if err != nil {
		return nil, append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid template", Detail: err.Error()})
	}
	j.Nomad.Template = template
	j.Nomad.JobModifyIndex = deref(nj.JobModifyIndex)
	return j, d.diags
}

// HasPolicy reports whether a group of nj carries a caravan scaling
// policy: whether the job is Caravan's to run.
func HasPolicy(nj *api.Job) bool {
	for _, tg := range nj.TaskGroups {
		if tg.Scaling != nil && tg.Scaling.Policy[NomadPolicy] != nil {
			return true
		}
	}
	return false
}

// apiGroup reads a group of a Nomad job from Nomad's API. Its caravan
// block is decoded from the policy as JSON, where HCL's JSON syntax reads
// a list of objects as blocks, which is how Nomad keeps them.
func (d *decoder) apiGroup(jobID string, tg *api.TaskGroup) *nomadGroup {
	name := deref(tg.Name)
	g := &nomadGroup{name: name, rng: hcl.Range{Filename: jobID + "/" + name}, count: -1}
	if tg.Count != nil {
		g.count = *tg.Count
	}
	if s := tg.Scaling; s != nil {
		if s.Min != nil {
			g.min = new(int(*s.Min))
		}
		if s.Max != nil {
			g.max = new(int(*s.Max))
		}
		if p := s.Policy[NomadPolicy]; p != nil {
			g.policy = d.jsonBlock(jobID+"/"+name+" policy", p)
		}
	}
	var tasks []*structs.Role
	var lifecycle []bool
	for _, t := range tg.Tasks {
		tasks = append(tasks, fromTask(t))
		lifecycle = append(lifecycle, t.Lifecycle != nil)
	}
	g.role = mergeTasks(tasks, mainTask(lifecycle))
	if g.role != nil {
		g.role.Meta = mergeMeta(tg.Meta, g.role.Meta)
		g.role.Constraints = append(fromConstraints(tg.Constraints), g.role.Constraints...)
		g.role.Affinities = append(fromAffinities(tg.Affinities), g.role.Affinities...)
	}
	return g
}

// jsonBlock returns the caravan block of a policy value as Nomad keeps
// it (a list of one object, or an object), nil after a diagnostic.
func (d *decoder) jsonBlock(name string, v any) *hcl.Block {
	src, err := json.Marshal(map[string]any{NomadPolicy: v})
	if err != nil {
		d.errorf(hcl.Range{Filename: name}, "Invalid policy", "The %s policy cannot be read: %v.", NomadPolicy, err)
		return nil
	}
	f, diags := hcljson.Parse(src, name)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return nil
	}
	return d.single(d.content(f.Body, nomadPolicySchema), "", NomadPolicy)
}

// Template returns nj as NomadSource.Template keeps it: nomad/api's JSON
// without the fields Nomad sets when it stores a job.
func Template(nj *api.Job) ([]byte, error) {
	c := *nj
	c.Stop, c.Status, c.StatusDescription, c.Stable = nil, nil, nil, nil
	c.Version, c.SubmitTime, c.VersionTag = nil, nil, nil
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = nil, nil, nil
	c.NomadTokenID = nil
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode Nomad job %q: %w", deref(nj.ID), err)
	}
	if len(b) > structs.MaxNomadTemplate {
		return nil, fmt.Errorf("job %q is %d bytes as JSON, more than the %d Caravan keeps of a Nomad job", deref(nj.ID), len(b), structs.MaxNomadTemplate)
	}
	return b, nil
}

func fromTask(t *api.Task) *structs.Role {
	r := &structs.Role{
		Driver:      t.Driver,
		Config:      maps.Clone(t.Config),
		Env:         maps.Clone(t.Env),
		Meta:        maps.Clone(t.Meta),
		Constraints: fromConstraints(t.Constraints),
		Affinities:  fromAffinities(t.Affinities),
		Resources:   &structs.Resources{},
	}
	if res := t.Resources; res != nil {
		r.Resources.CPU = deref(res.CPU)
		r.Resources.MemoryMB = deref(res.MemoryMB)
		for _, dev := range res.Devices {
			r.Resources.Devices = append(r.Resources.Devices, &structs.RequestedDevice{
				Name:        dev.Name,
				Count:       int(deref(dev.Count)),
				Constraints: fromConstraints(dev.Constraints),
				Affinities:  fromAffinities(dev.Affinities),
			})
		}
	}
	return r
}

func fromConstraints(cs []*api.Constraint) []*structs.Constraint {
	var out []*structs.Constraint
	for _, c := range cs {
		out = append(out, &structs.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand})
	}
	return out
}

func fromAffinities(as []*api.Affinity) []*structs.Affinity {
	var out []*structs.Affinity
	for _, a := range as {
		out = append(out, &structs.Affinity{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand, Weight: int(deref(a.Weight))})
	}
	return out
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
