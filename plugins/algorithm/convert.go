package algorithm

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/model"
	pb "github.com/caravan-sched/caravan/plugins/algorithm/proto/v1"
	"github.com/caravan-sched/caravan/structs"
)

// This file converts the planner's request and decision to and from their
// wire form. The ToProto functions copy everything the contract carries;
// the FromProto functions check what Go types cannot: no nil element in a
// repeated field, jobs with a spec and an ID, counts that fit an int,
// attributes with a value, at most five speed coefficients. They report
// every problem, each with where it is, and never panic.
//
// What does not cross the wire: a role's Config and Env (placement never
// reads them; they come back nil) and a job's StatusDescription (it comes
// back empty). A job's checkpoint comes back nil when it had neither a
// signal nor a timeout.

// maxTheta is the number of coefficients of a speed model.
const maxTheta = len(model.Speed{}.Theta)

// RequestToProto returns the wire form of req; nil for a nil req. Nil
// elements of req's slices become nil elements, which RequestFromProto
// rejects but proto.Marshal sends as empty messages. The result shares
// maps and slices with req (a speed model's coefficients, datacenters,
// attributes, metadata): neither may be modified while the other is in
// use.
func RequestToProto(req *planner.Request) *pb.PlanRequest {
	if req == nil {
		return nil
	}
	p := &pb.PlanRequest{
		Nodes: make([]*pb.Node, len(req.Nodes)),
		Jobs:  make([]*pb.Job, len(req.Jobs)),
		Now:   req.Now,
	}
	for i, n := range req.Nodes {
		p.Nodes[i] = nodeToProto(n)
	}
	for i, j := range req.Jobs {
		p.Jobs[i] = jobToProto(j)
	}
	return p
}

// RequestFromProto returns the request p carries, or an error naming every
// malformed part of it, such as `jobs[3] ("a"): speed model has 7
// coefficients, at most 5`. It checks the form only, not the jobs' specs
// (structs.Job.Validate does that). The request shares maps and the
// datacenters slices with p.
func RequestFromProto(p *pb.PlanRequest) (*planner.Request, error) {
	if p == nil {
		return nil, errors.New("plan request: no request")
	}
	req := &planner.Request{
		Nodes: make([]*structs.Node, len(p.Nodes)),
		Jobs:  make([]*planner.Job, len(p.Jobs)),
		Now:   p.Now,
	}
	var errs []error
	for i, pn := range p.Nodes {
		n, err := nodeFromProto(pn)
		if err != nil {
			errs = labelled(errs, fmt.Sprintf("nodes[%d]%s", i, quotedID(pn.GetId())), err)
		}
		req.Nodes[i] = n
	}
	for i, pj := range p.Jobs {
		j, err := jobFromProto(pj)
		if err != nil {
			errs = labelled(errs, fmt.Sprintf("jobs[%d]%s", i, quotedID(pj.GetSpec().GetId())), err)
		}
		req.Jobs[i] = j
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("malformed plan request: %w", errors.Join(errs...))
	}
	return req, nil
}

// DecisionToProto returns the wire form of dec; nil for a nil dec.
func DecisionToProto(dec *planner.Decision) *pb.PlanResponse {
	if dec == nil {
		return nil
	}
	p := &pb.PlanResponse{Placements: make([]*pb.Placement, len(dec.Placements))}
	for i, pl := range dec.Placements {
		p.Placements[i] = placementToProto(pl)
	}
	return p
}

// DecisionFromProto returns the decision p carries, or an error naming
// every malformed part of it. It checks the form only; whether the
// placements keep the planner's rules is planner.CheckDecision's to say.
func DecisionFromProto(p *pb.PlanResponse) (*planner.Decision, error) {
	if p == nil {
		return nil, errors.New("plan response: no response")
	}
	dec := &planner.Decision{Placements: make([]*structs.Placement, len(p.Placements))}
	var errs []error
	for i, pp := range p.Placements {
		pl, err := placementFromProto(pp)
		if err != nil {
			errs = labelled(errs, fmt.Sprintf("placements[%d]%s", i, quotedID(pp.GetJobId())), err)
		}
		dec.Placements[i] = pl
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("malformed plan response: %w", errors.Join(errs...))
	}
	return dec, nil
}

// CapabilitiesToProto returns the wire form of c.
func CapabilitiesToProto(c Capabilities) *pb.Capabilities {
	p := &pb.Capabilities{
		SpeedModels: c.SpeedModels, FixedSize: c.FixedSize,
		ChoosesBatch: c.ChoosesBatch, Uncoordinated: c.Uncoordinated, GpuTypes: c.GPUTypes,
	}
	for _, e := range c.Reads {
		p.Reads = append(p.Reads, string(e))
	}
	return p
}

// CapabilitiesFromProto returns the capabilities p declares; the zero
// declaration for a nil p. Of the estimators p reads, it keeps those the
// host knows (planner.Estimators), once each, in p's order: a name from a
// newer plugin means nothing here, and the list stays bounded whatever the
// plugin sends.
func CapabilitiesFromProto(p *pb.Capabilities) Capabilities {
	c := Capabilities{
		SpeedModels: p.GetSpeedModels(), FixedSize: p.GetFixedSize(),
		ChoosesBatch: p.GetChoosesBatch(), Uncoordinated: p.GetUncoordinated(), GPUTypes: p.GetGpuTypes(),
	}
	for _, name := range p.GetReads() {
		e := planner.Estimator(name)
		if slices.Contains(planner.Estimators, e) && !c.ReadsEstimator(e) {
			c.Reads = append(c.Reads, e)
		}
	}
	return c
}

// Errors.

// fieldError is one problem of a message, at a path relative to it such as
// "worker.resources.devices[0].count"; an empty path means the message
// itself.
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.err.Error()
	}
	return e.path + ": " + e.err.Error()
}

func (e *fieldError) Unwrap() error { return e.err }

// problems collects the fieldErrors of one message. Its zero value is
// empty and costs nothing until something fails.
type problems []error

// fail records a problem of the field at path.
func (ps *problems) fail(path, format string, args ...any) {
	*ps = append(*ps, &fieldError{path: path, err: fmt.Errorf(format, args...)})
}

// nilElement records a nil element of a repeated field.
func (ps *problems) nilElement(field string, i int) {
	ps.fail(index(field, i), "nil element")
}

// toInt converts the count at path to an int, recording a problem when it
// does not fit one.
func (ps *problems) toInt(path string, v int64) int {
	n := int(v)
	if int64(n) != v {
		ps.fail(path, "%d does not fit an int", v)
	}
	return n
}

// in records the problems err holds, a submessage's at prefix.
func (ps *problems) in(prefix string, err error) {
	for _, e := range leaves(err) {
		if fe, ok := e.(*fieldError); ok {
			*ps = append(*ps, &fieldError{path: joinPath(prefix, fe.path), err: fe.err})
		} else {
			*ps = append(*ps, &fieldError{path: prefix, err: e})
		}
	}
}

func (ps problems) err() error { return errors.Join(ps...) }

// leaves flattens joined errors.
func leaves(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// index returns the path of the i-th element of a repeated field.
func index(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

func joinPath(prefix, path string) string {
	switch {
	case path == "":
		return prefix
	case path[0] == '[':
		return prefix + path
	}
	return prefix + "." + path
}

// labelled appends err's problems to errs, each after label and a colon.
func labelled(errs []error, label string, err error) []error {
	for _, e := range leaves(err) {
		errs = append(errs, fmt.Errorf("%s: %w", label, e))
	}
	return errs
}

// quotedID returns ` ("id")` for a label, or nothing for an empty id.
func quotedID(id string) string {
	if id == "" {
		return ""
	}
	return " (" + strconv.Quote(id) + ")"
}

// Nodes.

func nodeToProto(n *structs.Node) *pb.Node {
	if n == nil {
		return nil
	}
	p := &pb.Node{
		Id:         n.ID,
		Name:       n.Name,
		Datacenter: n.Datacenter,
		NodeClass:  n.NodeClass,
		NodePool:   n.NodePool,
		Status:     n.Status,
		Eligible:   n.Eligible,
		Cpu:        int64(n.CPU),
		MemoryMb:   int64(n.MemoryMB),
		Attributes: n.Attributes,
		Meta:       n.Meta,
	}
	if len(n.Devices) > 0 {
		p.Devices = make([]*pb.NodeDevice, len(n.Devices))
		for i, d := range n.Devices {
			p.Devices[i] = nodeDeviceToProto(d)
		}
	}
	return p
}

func nodeFromProto(p *pb.Node) (*structs.Node, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	if p.Id == "" {
		ps.fail("id", "is required")
	}
	n := &structs.Node{
		ID:         p.Id,
		Name:       p.Name,
		Datacenter: p.Datacenter,
		NodeClass:  p.NodeClass,
		NodePool:   p.NodePool,
		Status:     p.Status,
		Eligible:   p.Eligible,
		CPU:        ps.toInt("cpu", p.Cpu),
		MemoryMB:   ps.toInt("memory_mb", p.MemoryMb),
		Attributes: p.Attributes,
		Meta:       p.Meta,
	}
	if len(p.Devices) > 0 {
		n.Devices = make([]*structs.NodeDeviceResource, len(p.Devices))
		for i, pd := range p.Devices {
			d, err := nodeDeviceFromProto(pd)
			if err != nil {
				ps.in(index("devices", i), err)
			}
			n.Devices[i] = d
		}
	}
	return n, ps.err()
}

func nodeDeviceToProto(d *structs.NodeDeviceResource) *pb.NodeDevice {
	if d == nil {
		return nil
	}
	p := &pb.NodeDevice{Vendor: d.Vendor, Type: d.Type, Name: d.Name}
	if len(d.Instances) > 0 {
		p.Instances = make([]*pb.DeviceInstance, len(d.Instances))
		for i, inst := range d.Instances {
			if inst != nil {
				p.Instances[i] = &pb.DeviceInstance{Id: inst.ID, Healthy: inst.Healthy, HealthDescription: inst.HealthDescription}
			}
		}
	}
	if len(d.Attributes) > 0 {
		p.Attributes = make(map[string]*pb.Attribute, len(d.Attributes))
		for k, a := range d.Attributes {
			p.Attributes[k] = attributeToProto(a)
		}
	}
	return p
}

func nodeDeviceFromProto(p *pb.NodeDevice) (*structs.NodeDeviceResource, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	d := &structs.NodeDeviceResource{Vendor: p.Vendor, Type: p.Type, Name: p.Name}
	if len(p.Instances) > 0 {
		d.Instances = make([]*structs.NodeDevice, len(p.Instances))
		for i, inst := range p.Instances {
			if inst == nil {
				ps.nilElement("instances", i)
				continue
			}
			d.Instances[i] = &structs.NodeDevice{ID: inst.Id, Healthy: inst.Healthy, HealthDescription: inst.HealthDescription}
		}
	}
	if len(p.Attributes) > 0 {
		d.Attributes = make(map[string]*structs.Attribute, len(p.Attributes))
		for k, pa := range p.Attributes {
			a, err := attributeFromProto(pa)
			if err != nil {
				ps.in("attributes["+strconv.Quote(k)+"]", err)
			}
			d.Attributes[k] = a
		}
	}
	return d, ps.err()
}

// attributeToProto sets the first of a's values in the order Int, Float,
// String, Bool; it sets none when a has none, which attributeFromProto
// rejects.
func attributeToProto(a *structs.Attribute) *pb.Attribute {
	if a == nil {
		return nil
	}
	p := &pb.Attribute{Unit: a.Unit}
	switch {
	case a.Int != nil:
		p.Value = &pb.Attribute_Int{Int: *a.Int}
	case a.Float != nil:
		p.Value = &pb.Attribute_Float{Float: *a.Float}
	case a.String != nil:
		p.Value = &pb.Attribute_String_{String_: *a.String}
	case a.Bool != nil:
		p.Value = &pb.Attribute_Bool{Bool: *a.Bool}
	}
	return p
}

func attributeFromProto(p *pb.Attribute) (*structs.Attribute, error) {
	if p == nil {
		return nil, errors.New("nil attribute")
	}
	a := &structs.Attribute{Unit: p.Unit}
	switch v := p.Value.(type) {
	case *pb.Attribute_Int:
		a.Int = &v.Int
	case *pb.Attribute_Float:
		a.Float = &v.Float
	case *pb.Attribute_String_:
		a.String = &v.String_
	case *pb.Attribute_Bool:
		a.Bool = &v.Bool
	default:
		return nil, errors.New("no value set")
	}
	return a, nil
}

// Jobs.

func jobToProto(j *planner.Job) *pb.Job {
	if j == nil {
		return nil
	}
	return &pb.Job{
		Spec:     jobSpecToProto(j.Job),
		Current:  placementToProto(j.Current),
		Loss:     lossToProto(j.Loss),
		Speed:    speedToProto(j.Speed),
		Young:    j.Young,
		Step:     j.Step,
		Subtasks: subtasksToProto(j.Subtasks),
		Progress: progressToProto(j.Progress),
		Usage:    usageToProto(j.Usage),
		Since:    j.Since,
		Perf:     perfToProto(j.Perf),
		Grad:     gradToProto(j.Grad),

		PerfByType:  perfByTypeToProto(j.PerfByType),
		RestartCost: j.RestartCost,
		Restarts:    int64(j.Restarts),

		AttainedService: j.AttainedService,
	}
}

func perfToProto(f *goodput.Fit) *pb.PerfFit {
	if f == nil {
		return nil
	}
	p := f.Params
	return &pb.PerfFit{
		AlphaC: p.AlphaC, BetaC: p.BetaC, AlphaN: p.AlphaN, BetaN: p.BetaN, AlphaR: p.AlphaR, BetaR: p.BetaR, Gamma: p.Gamma,
		Error: f.Error, MaxError: f.MaxError, Points: int64(f.Points), MaxReplicas: int64(f.MaxReplicas), MaxLocal: f.MaxLocal,
	}
}

func perfByTypeToProto(m map[string]*goodput.Fit) map[string]*pb.PerfFit {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*pb.PerfFit, len(m))
	for typ, f := range m {
		out[typ] = perfToProto(f)
	}
	return out
}

func gradToProto(g *goodput.GradParams) *pb.GradParams {
	if g == nil {
		return nil
	}
	return &pb.GradParams{Sqr: g.Sqr, Var: g.Var}
}

// perfFromProto refuses parameters a goodput model cannot compute with:
// not finite, not positive, or a gamma outside [1, 10]; and a largest
// local batch that is not a finite number, not negative. path names the
// fit in problems ("perf").
func perfFromProto(ps *problems, path string, p *pb.PerfFit) *goodput.Fit {
	f := &goodput.Fit{
		Params: goodput.PerfParams{
			AlphaC: p.AlphaC, BetaC: p.BetaC, AlphaN: p.AlphaN, BetaN: p.BetaN, AlphaR: p.AlphaR, BetaR: p.BetaR, Gamma: p.Gamma,
		},
		Error: p.Error, MaxError: p.MaxError, MaxLocal: p.MaxLocal,
		Points: ps.toInt(path+".points", p.Points), MaxReplicas: ps.toInt(path+".max_replicas", p.MaxReplicas),
	}
	for i, v := range f.Params.Slice() {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			ps.fail(path, "parameter %d is %v, not a positive finite number", i, v)
		}
	}
	if f.Params.Gamma < 1 || f.Params.Gamma > 10 {
		ps.fail(path+".gamma", "%v is outside [1, 10]", f.Params.Gamma)
	}
	if math.IsNaN(p.MaxLocal) || math.IsInf(p.MaxLocal, 0) || p.MaxLocal < 0 {
		ps.fail(path+".max_local", "%v is not a finite number, not negative", p.MaxLocal)
	}
	return f
}

func gradFromProto(ps *problems, p *pb.GradParams) *goodput.GradParams {
	for _, v := range []float64{p.Sqr, p.Var} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			ps.fail("grad", "%v is not a finite number at least 0", v)
		}
	}
	return &goodput.GradParams{Sqr: p.Sqr, Var: p.Var}
}

func usageToProto(u *structs.JobUsage) *pb.JobUsage {
	if u == nil {
		return nil
	}
	p := &pb.JobUsage{Namespace: u.Namespace, JobId: u.JobID, Time: u.Time, ModifyIndex: u.ModifyIndex}
	for _, t := range u.Tasks {
		if t == nil {
			p.Tasks = append(p.Tasks, nil)
			continue
		}
		p.Tasks = append(p.Tasks, &pb.TaskUsage{
			Role: t.Role, Rank: int64(t.Rank), NodeId: t.NodeID, AllocId: t.AllocID,
			CpuMhz: t.CPUMHz, MemoryMb: t.MemoryMB, MaxMemoryMb: t.MaxMemoryMB,
			CpuLimitMhz: int64(t.CPULimitMHz), MemoryLimitMb: int64(t.MemoryLimitMB),
			Restarts: int64(t.Restarts), OomKills: int64(t.OOMKills), LastOom: t.LastOOM,
			TaskStepTimeS: t.TaskStepTimeS, Source: t.Source,
		})
	}
	for _, s := range u.ByShape {
		p.ByShape = append(p.ByShape, &pb.ShapeUsage{
			NumPs: int64(s.Shape.PS), NumWorkers: int64(s.Shape.Workers),
			WorkerCpuMhz: s.WorkerCPUMHz, PsCpuMhz: s.PSCPUMHz, Measurements: int64(s.Measurements),
		})
	}
	return p
}

// usageFromProto converts a job's usage, refusing what no algorithm
// should read: nil elements, numbers that are not finite or negative,
// more than MaxUsageTasks tasks or MaxUsageShapes shapes.
func usageFromProto(ps *problems, p *pb.JobUsage) *structs.JobUsage {
	if len(p.Tasks) > structs.MaxUsageTasks {
		ps.fail("usage.tasks", "%d tasks, more than the %d allowed", len(p.Tasks), structs.MaxUsageTasks)
		return nil
	}
	if len(p.ByShape) > structs.MaxUsageShapes {
		ps.fail("usage.by_shape", "%d shapes, more than the %d allowed", len(p.ByShape), structs.MaxUsageShapes)
		return nil
	}
	u := &structs.JobUsage{Namespace: p.Namespace, JobID: p.JobId, Time: p.Time, ModifyIndex: p.ModifyIndex}
	measure := func(path string, vs ...float64) {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				ps.fail(path, "%v is not a finite number at least 0", v)
				return
			}
		}
	}
	for i, t := range p.Tasks {
		path := index("usage.tasks", i)
		if t == nil {
			ps.nilElement("usage.tasks", i)
			continue
		}
		measure(path, t.CpuMhz, t.MemoryMb, t.MaxMemoryMb, t.TaskStepTimeS)
		u.Tasks = append(u.Tasks, &structs.TaskUsage{
			Role: t.Role, Rank: ps.toInt(path+".rank", t.Rank), NodeID: t.NodeId, AllocID: t.AllocId,
			CPUMHz: t.CpuMhz, MemoryMB: t.MemoryMb, MaxMemoryMB: t.MaxMemoryMb,
			CPULimitMHz: ps.toInt(path+".cpu_limit_mhz", t.CpuLimitMhz), MemoryLimitMB: ps.toInt(path+".memory_limit_mb", t.MemoryLimitMb),
			Restarts: ps.toInt(path+".restarts", t.Restarts), OOMKills: ps.toInt(path+".oom_kills", t.OomKills), LastOOM: t.LastOom,
			TaskStepTimeS: t.TaskStepTimeS, Source: t.Source,
		})
	}
	for i, s := range p.ByShape {
		path := index("usage.by_shape", i)
		if s == nil {
			ps.nilElement("usage.by_shape", i)
			continue
		}
		measure(path, s.WorkerCpuMhz, s.PsCpuMhz)
		u.ByShape = append(u.ByShape, structs.ShapeUsage{
			Shape:        structs.Shape{PS: ps.toInt(path+".num_ps", s.NumPs), Workers: ps.toInt(path+".num_workers", s.NumWorkers)},
			WorkerCPUMHz: s.WorkerCpuMhz, PSCPUMHz: s.PsCpuMhz, Measurements: ps.toInt(path+".measurements", s.Measurements),
		})
	}
	return u
}

func progressToProto(pts []planner.ProgressPoint) []*pb.ProgressPoint {
	if len(pts) == 0 {
		return nil
	}
	out := make([]*pb.ProgressPoint, len(pts))
	for i, p := range pts {
		out[i] = &pb.ProgressPoint{Time: p.Time, Loss: p.Loss}
	}
	return out
}

func subtasksToProto(s *planner.Subtasks) *pb.Subtasks {
	if s == nil {
		return nil
	}
	return &pb.Subtasks{CpuS: s.CPU, NetS: s.Net, NumPs: int64(s.PS), NumWorkers: int64(s.Workers)}
}

func jobFromProto(p *pb.Job) (*planner.Job, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	j := &planner.Job{Young: p.Young, Step: p.Step, Since: p.Since, Restarts: ps.toInt("restarts", p.Restarts), AttainedService: p.AttainedService}
	if p.Perf != nil {
		j.Perf = perfFromProto(&ps, "perf", p.Perf)
	}
	if c := p.RestartCost; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		ps.fail("restart_cost", "%v is not a finite number, not negative", c)
	} else {
		j.RestartCost = c
	}
	for _, typ := range slices.Sorted(maps.Keys(p.PerfByType)) {
		f := p.PerfByType[typ]
		if f == nil || typ == "" || len(typ) > structs.MaxGPUTypeLen {
			ps.fail("perf_by_type", "GPU type %.40q: needs a name of at most %d characters and a fit", typ, structs.MaxGPUTypeLen)
			continue
		}
		if j.PerfByType == nil {
			j.PerfByType = make(map[string]*goodput.Fit, len(p.PerfByType))
		}
		j.PerfByType[typ] = perfFromProto(&ps, fmt.Sprintf("perf_by_type[%q]", typ), f)
	}
	if p.Grad != nil {
		j.Grad = gradFromProto(&ps, p.Grad)
	}
	if p.Usage != nil {
		j.Usage = usageFromProto(&ps, p.Usage)
	}
	if p.Spec == nil {
		ps.fail("", "no spec")
	} else {
		spec, err := jobSpecFromProto(p.Spec)
		if err != nil {
			ps.in("spec", err)
		}
		j.Job = spec
	}
	if s := p.Subtasks; s != nil {
		j.Subtasks = &planner.Subtasks{
			CPU: s.CpuS, Net: s.NetS,
			PS: ps.toInt("subtasks.num_ps", s.NumPs), Workers: ps.toInt("subtasks.num_workers", s.NumWorkers),
		}
	}
	if n := len(p.Progress); n > 0 {
		j.Progress = make([]planner.ProgressPoint, n)
		for i, pt := range p.Progress {
			switch {
			case pt == nil:
				ps.nilElement("progress", i)
			case math.IsNaN(pt.Loss) || math.IsInf(pt.Loss, 0):
				ps.fail(index("progress", i), "loss %v is not a finite number", pt.Loss)
			default:
				j.Progress[i] = planner.ProgressPoint{Time: pt.Time, Loss: pt.Loss}
			}
		}
	}
	if p.Current != nil {
		cur, err := placementFromProto(p.Current)
		if err != nil {
			ps.in("current", err)
		}
		j.Current = cur
	}
	if p.Loss != nil {
		j.Loss = &model.Loss{
			B0: p.Loss.B0, B1: p.Loss.B1, B2: p.Loss.B2,
			Scale:  p.Loss.Scale,
			RMSE:   p.Loss.Rmse,
			Points: ps.toInt("loss.points", p.Loss.Points),
		}
	}
	if p.Speed != nil {
		if n := len(p.Speed.Theta); n > maxTheta {
			ps.fail("", "speed model has %d coefficients, at most %d", n, maxTheta)
		}
		j.Speed = &model.Speed{
			Kind:    p.Speed.Kind,
			Batch:   p.Speed.Batch,
			RelRMSE: p.Speed.RelRmse,
			Points:  ps.toInt("speed.points", p.Speed.Points),
		}
		copy(j.Speed.Theta[:], p.Speed.Theta)
	}
	return j, ps.err()
}

func lossToProto(l *model.Loss) *pb.LossModel {
	if l == nil {
		return nil
	}
	return &pb.LossModel{B0: l.B0, B1: l.B1, B2: l.B2, Scale: l.Scale, Rmse: l.RMSE, Points: int64(l.Points)}
}

func speedToProto(s *model.Speed) *pb.SpeedModel {
	if s == nil {
		return nil
	}
	return &pb.SpeedModel{Kind: s.Kind, Theta: s.Theta[:], Batch: s.Batch, RelRmse: s.RelRMSE, Points: int64(s.Points)}
}

func jobSpecToProto(j *structs.Job) *pb.JobSpec {
	if j == nil {
		return nil
	}
	return &pb.JobSpec{
		Id:              j.ID,
		Name:            j.Name,
		Namespace:       j.Namespace,
		Region:          j.Region,
		Datacenters:     j.Datacenters,
		NodePool:        j.NodePool,
		Priority:        int64(j.Priority),
		Weight:          j.Weight,
		Meta:            j.Meta,
		Constraints:     constraintsToProto(j.Constraints),
		Affinities:      affinitiesToProto(j.Affinities),
		Training:        trainingToProto(j.Training),
		Elastic:         elasticToProto(j.Elastic),
		Worker:          roleToProto(j.Worker),
		ParameterServer: roleToProto(j.ParameterServer),
		Status:          j.Status,
		Version:         j.Version,
		SubmitTime:      j.SubmitTime,
		CreateIndex:     j.CreateIndex,
		ModifyIndex:     j.ModifyIndex,
	}
}

func jobSpecFromProto(p *pb.JobSpec) (*structs.Job, error) {
	var ps problems
	if p.Id == "" {
		ps.fail("id", "is required")
	}
	j := &structs.Job{
		ID:          p.Id,
		Name:        p.Name,
		Namespace:   p.Namespace,
		Region:      p.Region,
		Datacenters: p.Datacenters,
		NodePool:    p.NodePool,
		Priority:    ps.toInt("priority", p.Priority),
		Weight:      p.Weight,
		Meta:        p.Meta,
		Constraints: constraintsFromProto(&ps, "constraints", p.Constraints),
		Affinities:  affinitiesFromProto(&ps, "affinities", p.Affinities),
		Status:      p.Status,
		Version:     p.Version,
		SubmitTime:  p.SubmitTime,
		CreateIndex: p.CreateIndex,
		ModifyIndex: p.ModifyIndex,
	}
	if p.Training != nil {
		t, err := trainingFromProto(p.Training)
		if err != nil {
			ps.in("training", err)
		}
		j.Training = t
	}
	if p.Elastic != nil {
		e, err := elasticFromProto(p.Elastic)
		if err != nil {
			ps.in("elastic", err)
		}
		j.Elastic = e
	}
	if p.Worker != nil {
		r, err := roleFromProto(p.Worker)
		if err != nil {
			ps.in("worker", err)
		}
		j.Worker = r
	}
	if p.ParameterServer != nil {
		r, err := roleFromProto(p.ParameterServer)
		if err != nil {
			ps.in("parameter_server", err)
		}
		j.ParameterServer = r
	}
	return j, ps.err()
}

func trainingToProto(t *structs.Training) *pb.Training {
	if t == nil {
		return nil
	}
	p := &pb.Training{
		Framework:       t.Framework,
		Architecture:    t.Architecture,
		Mode:            t.Mode,
		GlobalBatchSize: int64(t.GlobalBatchSize),
		StepsPerEpoch:   int64(t.StepsPerEpoch),
	}
	if b := t.BatchSize; b != nil {
		p.BatchSize = &pb.BatchSize{Min: int64(b.Min), Max: int64(b.Max), MinLocal: int64(b.MinLocal), MaxLocal: int64(b.MaxLocal)}
	}
	if c := t.Convergence; c != nil {
		p.Convergence = &pb.Convergence{Threshold: c.Threshold, Patience: int64(c.Patience), MaxEpochs: int64(c.MaxEpochs)}
	}
	if len(t.Speeds) > 0 {
		p.Speeds = make([]*pb.SpeedPrior, len(t.Speeds))
		for i, sp := range t.Speeds {
			if sp != nil {
				p.Speeds[i] = &pb.SpeedPrior{Ps: int64(sp.PS), Workers: int64(sp.Workers), StepsPerSecond: sp.StepsPerSecond}
			}
		}
	}
	return p
}

func trainingFromProto(p *pb.Training) (*structs.Training, error) {
	var ps problems
	t := &structs.Training{
		Framework:       p.Framework,
		Architecture:    p.Architecture,
		Mode:            p.Mode,
		GlobalBatchSize: ps.toInt("global_batch_size", p.GlobalBatchSize),
		StepsPerEpoch:   ps.toInt("steps_per_epoch", p.StepsPerEpoch),
	}
	if b := p.BatchSize; b != nil {
		t.BatchSize = &structs.BatchSize{
			Min: ps.toInt("batch_size.min", b.Min), Max: ps.toInt("batch_size.max", b.Max),
			MinLocal: ps.toInt("batch_size.min_local", b.MinLocal), MaxLocal: ps.toInt("batch_size.max_local", b.MaxLocal),
		}
	}
	if c := p.Convergence; c != nil {
		t.Convergence = &structs.Convergence{
			Threshold: c.Threshold,
			Patience:  ps.toInt("convergence.patience", c.Patience),
			MaxEpochs: ps.toInt("convergence.max_epochs", c.MaxEpochs),
		}
	}
	if len(p.Speeds) > 0 {
		t.Speeds = make([]*structs.SpeedPrior, len(p.Speeds))
		for i, sp := range p.Speeds {
			prior, err := speedPriorFromProto(sp)
			if err != nil {
				ps.in(index("speeds", i), err)
			}
			t.Speeds[i] = prior
		}
	}
	return t, ps.err()
}

func speedPriorFromProto(p *pb.SpeedPrior) (*structs.SpeedPrior, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	sp := &structs.SpeedPrior{
		PS:             ps.toInt("ps", p.Ps),
		Workers:        ps.toInt("workers", p.Workers),
		StepsPerSecond: p.StepsPerSecond,
	}
	return sp, ps.err()
}

// elasticToProto flattens the checkpoint into the elastic message; a nil
// checkpoint is sent as an empty signal and a zero timeout.
func elasticToProto(e *structs.Elastic) *pb.Elastic {
	if e == nil {
		return nil
	}
	p := &pb.Elastic{
		Workers:          boundsToProto(&e.Workers),
		ParameterServers: boundsToProto(e.ParameterServers),
	}
	if c := e.Checkpoint; c != nil {
		p.CheckpointSignal = c.Signal
		p.CheckpointTimeoutNs = int64(c.Timeout)
	}
	return p
}

// elasticFromProto leaves the checkpoint nil when neither its signal nor
// its timeout is set. Unset workers bounds are zero.
func elasticFromProto(p *pb.Elastic) (*structs.Elastic, error) {
	var ps problems
	e := &structs.Elastic{}
	if p.Workers != nil {
		b, err := boundsFromProto(p.Workers)
		if err != nil {
			ps.in("workers", err)
		}
		e.Workers = b
	}
	if p.ParameterServers != nil {
		b, err := boundsFromProto(p.ParameterServers)
		if err != nil {
			ps.in("parameter_servers", err)
		}
		e.ParameterServers = &b
	}
	if p.CheckpointSignal != "" || p.CheckpointTimeoutNs != 0 {
		e.Checkpoint = &structs.Checkpoint{Signal: p.CheckpointSignal, Timeout: time.Duration(p.CheckpointTimeoutNs)}
	}
	return e, ps.err()
}

func boundsToProto(b *structs.Bounds) *pb.Bounds {
	if b == nil {
		return nil
	}
	return &pb.Bounds{Min: int64(b.Min), Max: int64(b.Max)}
}

func boundsFromProto(p *pb.Bounds) (structs.Bounds, error) {
	var ps problems
	b := structs.Bounds{Min: ps.toInt("min", p.Min), Max: ps.toInt("max", p.Max)}
	return b, ps.err()
}

// roleToProto leaves out the role's Config and Env: placement never reads
// them.
func roleToProto(r *structs.Role) *pb.Role {
	if r == nil {
		return nil
	}
	p := &pb.Role{
		Name:        r.Name,
		Driver:      r.Driver,
		Meta:        r.Meta,
		Constraints: constraintsToProto(r.Constraints),
		Affinities:  affinitiesToProto(r.Affinities),
	}
	if res := r.Resources; res != nil {
		p.Resources = &pb.Resources{
			Cpu: int64(res.CPU), MemoryMb: int64(res.MemoryMB),
			CpuRange: rangeToProto(res.CPURange), MemoryRange: rangeToProto(res.MemoryRange),
		}
		if len(res.Devices) > 0 {
			p.Resources.Devices = make([]*pb.RequestedDevice, len(res.Devices))
			for i, d := range res.Devices {
				p.Resources.Devices[i] = requestedDeviceToProto(d)
			}
		}
	}
	return p
}

func rangeToProto(r *structs.ResourceRange) *pb.ResourceRange {
	if r == nil {
		return nil
	}
	return &pb.ResourceRange{Min: int64(r.Min), Max: int64(r.Max), Initial: int64(r.Initial), Auto: r.Auto}
}

func rangeFromProto(ps *problems, path string, p *pb.ResourceRange) *structs.ResourceRange {
	if p == nil {
		return nil
	}
	return &structs.ResourceRange{
		Min: ps.toInt(path+".min", p.Min), Max: ps.toInt(path+".max", p.Max),
		Initial: ps.toInt(path+".initial", p.Initial), Auto: p.Auto,
	}
}

func roleFromProto(p *pb.Role) (*structs.Role, error) {
	var ps problems
	r := &structs.Role{
		Name:        p.Name,
		Driver:      p.Driver,
		Meta:        p.Meta,
		Constraints: constraintsFromProto(&ps, "constraints", p.Constraints),
		Affinities:  affinitiesFromProto(&ps, "affinities", p.Affinities),
	}
	if res := p.Resources; res != nil {
		r.Resources = &structs.Resources{
			CPU:         ps.toInt("resources.cpu", res.Cpu),
			MemoryMB:    ps.toInt("resources.memory_mb", res.MemoryMb),
			CPURange:    rangeFromProto(&ps, "resources.cpu_range", res.CpuRange),
			MemoryRange: rangeFromProto(&ps, "resources.memory_range", res.MemoryRange),
		}
		if len(res.Devices) > 0 {
			r.Resources.Devices = make([]*structs.RequestedDevice, len(res.Devices))
			for i, pd := range res.Devices {
				d, err := requestedDeviceFromProto(pd)
				if err != nil {
					ps.in(index("resources.devices", i), err)
				}
				r.Resources.Devices[i] = d
			}
		}
	}
	return r, ps.err()
}

func requestedDeviceToProto(d *structs.RequestedDevice) *pb.RequestedDevice {
	if d == nil {
		return nil
	}
	return &pb.RequestedDevice{
		Name:        d.Name,
		Count:       int64(d.Count),
		Constraints: constraintsToProto(d.Constraints),
		Affinities:  affinitiesToProto(d.Affinities),
	}
}

func requestedDeviceFromProto(p *pb.RequestedDevice) (*structs.RequestedDevice, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	d := &structs.RequestedDevice{
		Name:        p.Name,
		Count:       ps.toInt("count", p.Count),
		Constraints: constraintsFromProto(&ps, "constraints", p.Constraints),
		Affinities:  affinitiesFromProto(&ps, "affinities", p.Affinities),
	}
	return d, ps.err()
}

func constraintsToProto(cs []*structs.Constraint) []*pb.Constraint {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*pb.Constraint, len(cs))
	for i, c := range cs {
		if c != nil {
			out[i] = &pb.Constraint{Ltarget: c.LTarget, Rtarget: c.RTarget, Operand: c.Operand}
		}
	}
	return out
}

// constraintsFromProto converts the repeated field at path, recording its
// problems in ps.
func constraintsFromProto(ps *problems, path string, cs []*pb.Constraint) []*structs.Constraint {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*structs.Constraint, len(cs))
	for i, c := range cs {
		if c == nil {
			ps.nilElement(path, i)
			continue
		}
		out[i] = &structs.Constraint{LTarget: c.Ltarget, RTarget: c.Rtarget, Operand: c.Operand}
	}
	return out
}

func affinitiesToProto(as []*structs.Affinity) []*pb.Affinity {
	if len(as) == 0 {
		return nil
	}
	out := make([]*pb.Affinity, len(as))
	for i, a := range as {
		if a != nil {
			out[i] = &pb.Affinity{Ltarget: a.LTarget, Rtarget: a.RTarget, Operand: a.Operand, Weight: int64(a.Weight)}
		}
	}
	return out
}

// affinitiesFromProto converts the repeated field at path, recording its
// problems in ps.
func affinitiesFromProto(ps *problems, path string, as []*pb.Affinity) []*structs.Affinity {
	if len(as) == 0 {
		return nil
	}
	out := make([]*structs.Affinity, len(as))
	for i, pa := range as {
		a, err := affinityFromProto(pa)
		if err != nil {
			ps.in(index(path, i), err)
		}
		out[i] = a
	}
	return out
}

func affinityFromProto(p *pb.Affinity) (*structs.Affinity, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	a := &structs.Affinity{LTarget: p.Ltarget, RTarget: p.Rtarget, Operand: p.Operand, Weight: ps.toInt("weight", p.Weight)}
	return a, ps.err()
}

// Placements. A placement's Metric is not on the wire: the host explains
// paused placements itself after the decision (planner.ExplainPaused), the
// same way for every algorithm.

func placementToProto(pl *structs.Placement) *pb.Placement {
	if pl == nil {
		return nil
	}
	p := &pb.Placement{
		Namespace:  pl.Namespace,
		JobId:      pl.JobID,
		NumPs:      int64(pl.NumPS),
		NumWorkers: int64(pl.NumWorkers),
		Reason:     pl.Reason,
	}
	if b := pl.Batch; b != nil {
		p.Batch = &pb.Batch{Global: int64(b.Global), Local: int64(b.Local), AccumSteps: int64(b.AccumSteps)}
	}
	if len(pl.Nodes) > 0 {
		p.Nodes = make([]*pb.NodeTasks, len(pl.Nodes))
		for i, nt := range pl.Nodes {
			if nt != nil {
				p.Nodes[i] = &pb.NodeTasks{
					NodeId: nt.NodeID, Ps: int64(nt.PS), Workers: int64(nt.Workers),
					PsSize: sizeToProto(nt.PSSize), WorkerSize: sizeToProto(nt.WorkerSize),
				}
			}
		}
	}
	for _, a := range pl.Actions {
		if a == nil {
			p.Actions = append(p.Actions, nil)
			continue
		}
		p.Actions = append(p.Actions, &pb.TaskAction{
			Kind: a.Kind, Role: a.Role, Rank: int64(a.Rank), NodeId: a.NodeID, Reason: a.Reason, Details: a.Details,
		})
	}
	return p
}

// sizeToProto leaves a zero size unset, as a plugin that does not size
// tasks sends it.
func sizeToProto(s structs.TaskSize) *pb.TaskSize {
	if s.IsZero() {
		return nil
	}
	return &pb.TaskSize{Cpu: int64(s.CPU), MemoryMb: int64(s.MemoryMB)}
}

func sizeFromProto(ps *problems, path string, p *pb.TaskSize) structs.TaskSize {
	if p == nil {
		return structs.TaskSize{}
	}
	return structs.TaskSize{CPU: ps.toInt(path+".cpu", p.Cpu), MemoryMB: ps.toInt(path+".memory_mb", p.MemoryMb)}
}

func placementFromProto(p *pb.Placement) (*structs.Placement, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	if p.JobId == "" {
		ps.fail("job_id", "is required")
	}
	pl := &structs.Placement{
		Namespace:  p.Namespace,
		JobID:      p.JobId,
		NumPS:      ps.toInt("num_ps", p.NumPs),
		NumWorkers: ps.toInt("num_workers", p.NumWorkers),
		Reason:     p.Reason,
	}
	if b := p.Batch; b != nil {
		pl.Batch = &structs.Batch{
			Global: ps.toInt("batch.global", b.Global), Local: ps.toInt("batch.local", b.Local), AccumSteps: ps.toInt("batch.accum_steps", b.AccumSteps),
		}
	}
	if len(p.Nodes) > 0 {
		pl.Nodes = make([]*structs.NodeTasks, len(p.Nodes))
		for i, nt := range p.Nodes {
			t, err := nodeTasksFromProto(nt)
			if err != nil {
				ps.in(index("nodes", i), err)
			}
			pl.Nodes[i] = t
		}
	}
	for i, a := range p.Actions {
		if a == nil {
			ps.nilElement("actions", i)
			continue
		}
		pl.Actions = append(pl.Actions, &structs.TaskAction{
			Kind: a.Kind, Role: a.Role, Rank: ps.toInt(index("actions", i)+".rank", a.Rank), NodeID: a.NodeId, Reason: a.Reason, Details: a.Details,
		})
	}
	return pl, ps.err()
}

func nodeTasksFromProto(p *pb.NodeTasks) (*structs.NodeTasks, error) {
	if p == nil {
		return nil, errors.New("nil element")
	}
	var ps problems
	nt := &structs.NodeTasks{
		NodeID: p.NodeId, PS: ps.toInt("ps", p.Ps), Workers: ps.toInt("workers", p.Workers),
		PSSize: sizeFromProto(&ps, "ps_size", p.PsSize), WorkerSize: sizeFromProto(&ps, "worker_size", p.WorkerSize),
	}
	return nt, ps.err()
}
