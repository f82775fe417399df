package server

import (
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// jobStub reads what GET /v1/jobs shows of job: what runs of it (or what
// the latest decision gives it, before the driver's first report), its
// progress and the predicted time left. The GPU types of what runs are
// those of nodes, the cluster's (none with nil nodes).
func (s *Server) jobStub(txn *memdb.Txn, ws memdb.WatchSet, job *structs.Job, nodes []*structs.Node) (*structs.JobListStub, error) {
	st := &structs.JobListStub{
		ID: job.ID, Name: job.Name, Namespace: job.Namespace, Status: job.Status, StatusDescription: job.StatusDescription,
		Version: job.Version, Priority: job.Priority, SubmitTime: job.SubmitTime, Declared: job.Nomad != nil,
		SimSpeed: s.cfg.SimSpeed, CreateIndex: job.CreateIndex, ModifyIndex: job.ModifyIndex,
	}
	desired, err := state.Desired(txn, ws, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	observed, err := state.ObservedOf(txn, ws, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	var running *structs.Placement
	switch {
	case observed != nil:
		running = observed.Placement
	case desired != nil:
		running = desired.Placement
	}
	if desired != nil && desired.Placement != nil {
		st.Algorithm, st.Reason = desired.Algorithm, desired.Placement.Reason
	}
	if running != nil && !structs.Terminal(job.Status) {
		st.NumPS, st.NumWorkers, st.Nodes = running.NumPS, running.NumWorkers, len(running.Nodes)
		st.GPUs = placementGPUs(job, running)
		st.GPUTypes = structs.GPUTypeNames(structs.PlacementGPUTypes(nodes, running))
	}
	model, err := s.currentModel(txn, ws, job)
	if err != nil {
		return nil, err
	}
	if model != nil {
		st.Step, st.TotalSteps = model.Step, model.TotalSteps
		if model.TotalSteps > 0 {
			st.Progress = min(float64(model.Step)/model.TotalSteps, 1)
		}
		st.RemainingSeconds = model.RemainingSeconds
	}
	if structs.Terminal(job.Status) {
		st.RemainingSeconds = 0
	}
	if job.Status == structs.JobStatusComplete {
		st.Progress = 1
	}
	return st, nil
}

// currentModel returns job's models with the step and time left brought
// to its newest sample: models are committed when they change, not at
// every step. The step is the one that runs, the newest sample's, not the
// highest ever reported: a generation that resumed from an older
// checkpoint than its last report shows the step it trains at. nil when
// none is fitted.
func (s *Server) currentModel(txn *memdb.Txn, ws memdb.WatchSet, job *structs.Job) (*structs.JobModel, error) {
	m, err := state.Model(txn, ws, job.Namespace, job.ID)
	if err != nil || m == nil {
		return m, err
	}
	smp, err := state.Samples(txn, ws, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	if smp == nil || len(smp.Samples) == 0 {
		return m, nil
	}
	c := *m
	c.Step = newestStep(smp.Samples)
	if c.TotalSteps > 0 && c.StepsPerSecond > 0 {
		c.RemainingSeconds = max(c.TotalSteps-float64(c.Step), 0) / c.StepsPerSecond
	}
	return &c, nil
}

// newestSampled bounds how many of a job's latest samples newestStep
// looks at: samples are stored as they arrive, and collectors scraped in
// turn may deliver a few out of their order.
const newestSampled = 32

// newestStep returns the step of the sample the trainer took last (the
// latest Time) among the last newestSampled of samples, which must not be
// empty.
func newestStep(samples []structs.Sample) int64 {
	var newest *structs.Sample
	for i := range samples[max(len(samples)-newestSampled, 0):] {
		smp := &samples[max(len(samples)-newestSampled, 0)+i]
		if !smp.Profile && (newest == nil || smp.Time > newest.Time) {
			newest = smp
		}
	}
	if newest == nil {
		return 0 // profiling runs' alone: no step yet
	}
	return newest.Step
}

// placementGPUs counts the GPU instances the tasks of p request.
func placementGPUs(job *structs.Job, p *structs.Placement) int {
	worker := roleGPUs(job.Worker)
	ps := worker
	if job.ParameterServer != nil {
		ps = roleGPUs(job.ParameterServer)
	}
	return p.NumWorkers*worker + p.NumPS*ps
}

// roleGPUs counts the GPU instances one task of r requests.
func roleGPUs(r *structs.Role) int {
	if r == nil || r.Resources == nil {
		return 0
	}
	n := 0
	for _, d := range r.Resources.Devices {
		if id, err := structs.ParseDeviceID(d.Name); err == nil && id.Type == "gpu" {
			n += d.Count
		}
	}
	return n
}
