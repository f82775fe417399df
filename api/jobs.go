package api

import (
	"net/http"
	"net/url"
	"strconv"
)

// Jobs is the job endpoints.
type Jobs struct{ c *Client }

// Jobs returns the job endpoints.
func (c *Client) Jobs() *Jobs { return &Jobs{c: c} }

func jobPath(id string, sub ...string) string {
	p := "/v1/job/" + url.PathEscape(id)
	for _, s := range sub {
		p += "/" + s
	}
	return p
}

// Register submits a new job (POST /v1/jobs) in the namespace the job
// names. It fails with a 409 Error if an active job has the same ID and
// another spec; use Update to change it. The same spec again changes
// nothing and answers Unchanged.
func (j *Jobs) Register(req *JobRegisterRequest, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	return j.register(http.MethodPost, "/v1/jobs", req, w)
}

// Update registers a new version of job id (PUT /v1/job/<id>), or the job
// when there is none. The active job's spec again changes nothing and
// answers Unchanged.
func (j *Jobs) Update(id string, req *JobRegisterRequest, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	return j.register(http.MethodPut, jobPath(id), req, w)
}

// Revert registers the spec of an earlier version of job id in
// w.Namespace as its next version (POST /v1/job/<id>/revert). An unknown
// job or version is a 404 Error, a failed EnforcePriorVersion a 409; the
// active job's own spec answers Unchanged.
func (j *Jobs) Revert(id string, req *JobRevertRequest, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	return j.register(http.MethodPost, jobPath(id, "revert"), req, w)
}

// register makes a write that answers a JobRegisterResponse, whose Index
// is the WriteMeta's LastIndex.
func (j *Jobs) register(method, path string, req any, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	var out JobRegisterResponse
	meta, err := j.c.write(method, path, nil, req, &out, w)
	if err != nil {
		return nil, nil, err
	}
	meta.LastIndex = max(meta.LastIndex, out.Index)
	return &out, meta, nil
}

// Plan returns the placement a job would get now, committing nothing.
func (j *Jobs) Plan(req *JobRegisterRequest, w *WriteOptions) (*PlanResponse, *WriteMeta, error) {
	return writeOne[PlanResponse](j.c, http.MethodPost, "/v1/jobs/plan", req, w)
}

// Stop stops job id of w.Namespace; with purge it also deletes it and its
// history.
func (j *Jobs) Stop(id string, purge bool, w *WriteOptions) (*WriteMeta, error) {
	var v url.Values
	if purge {
		v = url.Values{"purge": {strconv.FormatBool(purge)}}
	}
	return j.c.write(http.MethodDelete, jobPath(id), v, nil, nil, w)
}

// List returns the jobs of q's namespace, or of all namespaces when it is
// empty, ordered by namespace and ID, with q's list options.
func (j *Jobs) List(q *QueryOptions) ([]*JobListStub, *QueryMeta, error) {
	return get[[]*JobListStub](j.c, "/v1/jobs", nil, q)
}

// Info returns a job.
func (j *Jobs) Info(id string, q *QueryOptions) (*Job, *QueryMeta, error) {
	return getOne[Job](j.c, jobPath(id), nil, q)
}

// Summary returns a job with its placement, models and sample count.
func (j *Jobs) Summary(id string, q *QueryOptions) (*JobSummary, *QueryMeta, error) {
	return getOne[JobSummary](j.c, jobPath(id, "summary"), nil, q)
}

// Samples returns the samples the server keeps of a job, oldest first:
// a bounded history, thinned in its older half when full.
func (j *Jobs) Samples(id string, q *QueryOptions) (*JobSamples, *QueryMeta, error) {
	return getOne[JobSamples](j.c, jobPath(id, "samples"), nil, q)
}

// Versions returns a job's versions, newest first.
func (j *Jobs) Versions(id string, q *QueryOptions) ([]*Job, *QueryMeta, error) {
	return get[[]*Job](j.c, jobPath(id, "versions"), nil, q)
}

// History returns a job's placements, newest first.
func (j *Jobs) History(id string, q *QueryOptions) ([]*JobPlacement, *QueryMeta, error) {
	return get[[]*JobPlacement](j.c, jobPath(id, "history"), nil, q)
}
