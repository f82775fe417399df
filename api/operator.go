package api

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/caravan-sched/caravan/structs"
)

// Nodes returns the cluster's nodes, ordered by ID, with q's list options.
func (c *Client) Nodes(q *QueryOptions) ([]*structs.Node, *QueryMeta, error) {
	var out []*structs.Node
	meta, err := c.do(q.ctx(), http.MethodGet, "/v1/nodes", q.values(), nil, &out)
	return out, meta, err
}

// Node returns the node with the given ID, with its devices and the tasks
// that run there.
func (c *Client) Node(id string, q *QueryOptions) (*NodeDetail, *QueryMeta, error) {
	var out NodeDetail
	meta, err := c.do(q.ctx(), http.MethodGet, "/v1/node/"+url.PathEscape(id), q.values(), nil, &out)
	return &out, meta, err
}

// Plugins describes the algorithms the agent can run, built-in and
// external, with their health.
func (c *Client) Plugins(ctx context.Context) ([]*structs.PluginStatus, error) {
	var out []*structs.PluginStatus
	_, err := c.do(ctx, http.MethodGet, "/v1/plugins", nil, nil, &out)
	return out, err
}

// LatestPlan returns the plan in force: the last decision's index and
// algorithm and the desired placement of every active job.
func (c *Client) LatestPlan(q *QueryOptions) (*structs.Plan, *QueryMeta, error) {
	var out structs.Plan
	meta, err := c.do(q.ctx(), http.MethodGet, "/v1/plan", q.values(), nil, &out)
	return &out, meta, err
}

// Events returns the events committed after the Raft index q.WaitIndex (0:
// every event kept), oldest first, of job if not empty, and of q.Namespace
// if set; q.Filter selects among them. With q.WaitIndex set it blocks until
// there is one, or for q.WaitTime; QueryMeta.LastIndex is then the
// WaitIndex of the next call.
func (c *Client) Events(job string, q *QueryOptions) ([]*structs.Event, *QueryMeta, error) {
	v := q.values()
	if job != "" {
		v.Set("job", job)
	}
	var out []*structs.Event
	meta, err := c.do(q.ctx(), http.MethodGet, "/v1/events", v, nil, &out)
	return out, meta, err
}

// Operator is the operator endpoints.
type Operator struct{ c *Client }

// Operator returns the operator endpoints.
func (c *Client) Operator() *Operator { return &Operator{c: c} }

// RaftConfiguration returns the servers of the Raft configuration.
func (o *Operator) RaftConfiguration(ctx context.Context) (*RaftConfiguration, error) {
	var out RaftConfiguration
	_, err := o.c.do(ctx, http.MethodGet, "/v1/operator/raft/configuration", nil, nil, &out)
	return &out, err
}

// RaftRemovePeer removes a server from the Raft configuration.
func (o *Operator) RaftRemovePeer(ctx context.Context, id string) error {
	_, err := o.c.do(ctx, http.MethodDelete, "/v1/operator/raft/peer", url.Values{"id": {id}}, nil, nil)
	return err
}

// SchedulerConfig returns the replicated scheduler configuration.
func (o *Operator) SchedulerConfig(q *QueryOptions) (*structs.SchedulerConfig, *QueryMeta, error) {
	var out structs.SchedulerConfig
	meta, err := o.c.do(q.ctx(), http.MethodGet, "/v1/operator/scheduler/configuration", q.values(), nil, &out)
	return &out, meta, err
}

// SetSchedulerConfig sets the algorithm and its options; the leader
// switches at its next round.
func (o *Operator) SetSchedulerConfig(ctx context.Context, req *SchedulerConfigRequest) error {
	_, err := o.c.do(ctx, http.MethodPut, "/v1/operator/scheduler/configuration", nil, req, nil)
	return err
}

// SnapshotSave writes a snapshot of the cluster's state to w.
func (o *Operator) SnapshotSave(ctx context.Context, w io.Writer) error {
	resp, err := o.c.raw(ctx, http.MethodGet, "/v1/operator/snapshot", nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// SnapshotRestore replaces the cluster's state with a saved snapshot.
func (o *Operator) SnapshotRestore(ctx context.Context, r io.Reader) error {
	_, err := o.c.do(ctx, http.MethodPut, "/v1/operator/snapshot", nil, r, nil)
	return err
}

// Agent is the agent endpoints.
type Agent struct{ c *Client }

// Agent returns the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{c: c} }

// Self describes the agent.
func (a *Agent) Self(ctx context.Context) (*AgentSelf, error) {
	var out AgentSelf
	_, err := a.c.do(ctx, http.MethodGet, "/v1/agent/self", nil, nil, &out)
	return &out, err
}

// Health returns nil when the agent knows a cluster leader.
func (a *Agent) Health(ctx context.Context) error {
	_, err := a.c.do(ctx, http.MethodGet, "/v1/agent/health", nil, nil, nil)
	return err
}

// Leader returns the Raft address of the cluster's leader, empty if none.
func (c *Client) Leader(ctx context.Context) (string, error) {
	var out string
	_, err := c.do(ctx, http.MethodGet, "/v1/status/leader", nil, nil, &out)
	return out, err
}
