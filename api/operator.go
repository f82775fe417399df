package api

import (
	"io"
	"net/http"
	"net/url"
)

// Plugins describes the algorithms the agent can run, built-in and
// external, with their health; each agent answers for its own.
func (c *Client) Plugins(q *QueryOptions) ([]*PluginStatus, *QueryMeta, error) {
	return get[[]*PluginStatus](c, "/v1/plugins", nil, q)
}

// LatestPlan returns the plan in force: the last decision's index and
// algorithm and the desired placement of every active job.
func (c *Client) LatestPlan(q *QueryOptions) (*Plan, *QueryMeta, error) {
	return getOne[Plan](c, "/v1/plan", nil, q)
}

// Events returns the events committed after the Raft index q.WaitIndex (0:
// every event kept), oldest first, of job if not empty, and of q.Namespace
// if set; q.Filter selects among them. With q.WaitIndex set it blocks until
// there is one, or for q.WaitTime; QueryMeta.LastIndex is then the
// WaitIndex of the next call.
func (c *Client) Events(job string, q *QueryOptions) ([]*Event, *QueryMeta, error) {
	var v url.Values
	if job != "" {
		v = url.Values{"job": {job}}
	}
	return get[[]*Event](c, "/v1/events", v, q)
}

// Leader returns the Raft address of the cluster's leader, empty if none,
// as the agent knows it.
func (c *Client) Leader(q *QueryOptions) (string, *QueryMeta, error) {
	return get[string](c, "/v1/status/leader", nil, q)
}

// Operator is the operator endpoints.
type Operator struct{ c *Client }

// Operator returns the operator endpoints.
func (c *Client) Operator() *Operator { return &Operator{c: c} }

// RaftConfiguration returns the servers of the Raft configuration.
func (o *Operator) RaftConfiguration(q *QueryOptions) (*RaftConfiguration, *QueryMeta, error) {
	return getOne[RaftConfiguration](o.c, "/v1/operator/raft/configuration", nil, q)
}

// RaftRemovePeer removes a server from the Raft configuration.
func (o *Operator) RaftRemovePeer(id string, w *WriteOptions) (*WriteMeta, error) {
	return o.c.write(http.MethodDelete, "/v1/operator/raft/peer", url.Values{"id": {id}}, nil, nil, w)
}

// SchedulerConfig returns the replicated scheduler configuration.
func (o *Operator) SchedulerConfig(q *QueryOptions) (*SchedulerConfig, *QueryMeta, error) {
	return getOne[SchedulerConfig](o.c, "/v1/operator/scheduler/configuration", nil, q)
}

// SetSchedulerConfig sets the algorithm and its options; the leader
// switches at its next round.
func (o *Operator) SetSchedulerConfig(req *SchedulerConfigRequest, w *WriteOptions) (*WriteMeta, error) {
	return o.c.write(http.MethodPut, "/v1/operator/scheduler/configuration", nil, req, nil, w)
}

// SnapshotSave writes a snapshot of the cluster's state to dst;
// QueryMeta.LastIndex is the snapshot's Raft index.
func (o *Operator) SnapshotSave(dst io.Writer, q *QueryOptions) (*QueryMeta, error) {
	var token string
	if q != nil {
		token = q.AuthToken
	}
	resp, err := o.c.raw(q.Context(), http.MethodGet, "/v1/operator/snapshot", nil, nil, token)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(dst, resp.Body); err != nil {
		return nil, err
	}
	return &QueryMeta{LastIndex: indexHeader(resp)}, nil
}

// SnapshotRestore replaces the cluster's state with a saved snapshot.
func (o *Operator) SnapshotRestore(src io.Reader, w *WriteOptions) (*WriteMeta, error) {
	return o.c.write(http.MethodPut, "/v1/operator/snapshot", nil, src, nil, w)
}

// Agent is the agent endpoints: each agent answers for itself.
type Agent struct{ c *Client }

// Agent returns the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{c: c} }

// Self describes the agent.
func (a *Agent) Self(q *QueryOptions) (*AgentSelf, *QueryMeta, error) {
	return getOne[AgentSelf](a.c, "/v1/agent/self", nil, q)
}

// Health returns no error when the agent knows a cluster leader, and a
// 503 Error when it does not.
func (a *Agent) Health(q *QueryOptions) (*QueryMeta, error) {
	return a.c.query("/v1/agent/health", nil, nil, q)
}
