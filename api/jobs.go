package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/caravan-sched/caravan/structs"
)

// Jobs is the job endpoints.
type Jobs struct{ c *Client }

// Jobs returns the job endpoints.
func (c *Client) Jobs() *Jobs { return &Jobs{c: c} }

func nsValues(ns string) url.Values {
	v := url.Values{}
	if ns != "" {
		v.Set("namespace", ns)
	}
	return v
}

// Register submits a new job (POST /v1/jobs). It fails with a 409 Error if
// an active job has the same ID and another spec; use Update to change it.
// The same spec again changes nothing and answers Unchanged.
func (j *Jobs) Register(ctx context.Context, req *JobRegisterRequest) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	_, err := j.c.do(ctx, http.MethodPost, "/v1/jobs", nil, req, &out)
	return &out, err
}

// Update registers a new version of job id (PUT /v1/job/<id>), or the job
// when there is none. The active job's spec again changes nothing and
// answers Unchanged.
func (j *Jobs) Update(ctx context.Context, id string, req *JobRegisterRequest) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	_, err := j.c.do(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(id), nil, req, &out)
	return &out, err
}

// Plan returns the placement a job would get now, committing nothing.
func (j *Jobs) Plan(ctx context.Context, req *JobRegisterRequest) (*PlanResponse, error) {
	var out PlanResponse
	_, err := j.c.do(ctx, http.MethodPost, "/v1/jobs/plan", nil, req, &out)
	return &out, err
}

// List returns the jobs of q's namespace, or of all namespaces when it is
// empty, ordered by namespace and ID, with q's list options.
func (j *Jobs) List(q *QueryOptions) ([]*JobListStub, *QueryMeta, error) {
	var out []*JobListStub
	meta, err := j.c.do(q.ctx(), http.MethodGet, "/v1/jobs", q.values(), nil, &out)
	return out, meta, err
}

// Info returns a job.
func (j *Jobs) Info(id string, q *QueryOptions) (*structs.Job, *QueryMeta, error) {
	var out structs.Job
	meta, err := j.c.do(q.ctx(), http.MethodGet, "/v1/job/"+url.PathEscape(id), q.values(), nil, &out)
	return &out, meta, err
}

// Summary returns a job with its placement, models and sample count.
func (j *Jobs) Summary(id string, q *QueryOptions) (*JobSummary, *QueryMeta, error) {
	var out JobSummary
	meta, err := j.c.do(q.ctx(), http.MethodGet, "/v1/job/"+url.PathEscape(id)+"/summary", q.values(), nil, &out)
	return &out, meta, err
}

// Samples returns the samples the server keeps of a job, oldest first:
// a bounded history, thinned in its older half when full.
func (j *Jobs) Samples(id string, q *QueryOptions) (*structs.JobSamples, *QueryMeta, error) {
	var out structs.JobSamples
	meta, err := j.c.do(q.ctx(), http.MethodGet, "/v1/job/"+url.PathEscape(id)+"/samples", q.values(), nil, &out)
	return &out, meta, err
}

// Versions returns a job's versions, newest first.
func (j *Jobs) Versions(id string, q *QueryOptions) ([]*structs.Job, *QueryMeta, error) {
	var out []*structs.Job
	meta, err := j.c.do(q.ctx(), http.MethodGet, "/v1/job/"+url.PathEscape(id)+"/versions", q.values(), nil, &out)
	return out, meta, err
}

// Revert registers the spec of an earlier version of job id in namespace
// as its next version (POST /v1/job/<id>/revert). An unknown job or version
// is a 404 Error, a failed EnforcePriorVersion a 409; the active job's own
// spec answers Unchanged.
func (j *Jobs) Revert(ctx context.Context, namespace, id string, req *JobRevertRequest) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	_, err := j.c.do(ctx, http.MethodPost, "/v1/job/"+url.PathEscape(id)+"/revert", nsValues(namespace), req, &out)
	return &out, err
}

// History returns a job's placements, newest first.
func (j *Jobs) History(id string, q *QueryOptions) ([]*structs.JobPlacement, *QueryMeta, error) {
	var out []*structs.JobPlacement
	meta, err := j.c.do(q.ctx(), http.MethodGet, "/v1/job/"+url.PathEscape(id)+"/history", q.values(), nil, &out)
	return out, meta, err
}

// Stop stops a job; with purge it also deletes it and its history.
func (j *Jobs) Stop(ctx context.Context, namespace, id string, purge bool) error {
	v := nsValues(namespace)
	if purge {
		v.Set("purge", "true")
	}
	_, err := j.c.do(ctx, http.MethodDelete, "/v1/job/"+url.PathEscape(id), v, nil, nil)
	return err
}
