package server

import (
	"net/http"
	"slices"

	"github.com/caravan-sched/caravan/acl"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// Route requirements of the queue endpoints: a queue rule
// (acl.Policy.Queue), as Nomad's quota rule.
var (
	queueRead  = coarse("queue read", (*acl.ACL).AllowQueueRead)
	queueWrite = coarse("queue write", (*acl.ACL).AllowQueueWrite)
)

// queueRoutes registers the queue endpoints (issue 32).
func (s *Server) queueRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/queues", s.read(s.allow(queueRead, s.queueList)))
	mux.HandleFunc("PUT /v1/queues", s.writeChecked(queueWrite, s.queueUpsert, s.checkQueueRequest))
	mux.HandleFunc("POST /v1/queues", s.writeChecked(queueWrite, s.queueUpsert, s.checkQueueRequest))
	mux.HandleFunc("GET /v1/queue/{name}", s.read(s.allow(queueRead, s.queueRead)))
	mux.HandleFunc("DELETE /v1/queue/{name}", s.write(s.allow(queueWrite, s.queueDelete)))
}

// queueList answers GET /v1/queues: every queue, by name, with its usage
// under the latest decision (its jobs not listed), with the list options
// (list.go; ?prefix= matches names).
func (s *Server) queueList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	res, err := s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		qs, err := state.Queues(txn, ws)
		if err != nil {
			return nil, err
		}
		u, err := readQueueUsage(txn, ws, qs)
		if err != nil {
			return nil, err
		}
		out := make([]*structs.Queue, len(qs))
		for i, q := range qs {
			out[i] = u.status(q, false)
		}
		return out, nil
	}, queueUsageTables...))
	if err != nil {
		return nil, err
	}
	return apply(w, opts, res.([]*structs.Queue), byID(func(q *structs.Queue) string { return q.Name }))
}

// queueRead answers GET /v1/queue/<name>: the queue with its usage under
// the latest decision and its jobs, those of the namespaces the token may
// list jobs of (as GET /v1/jobs lists them: the queue rule shows the
// queue's totals, not other teams' job names); 404 for a queue that does
// not exist (a blocking read waits for it).
func (s *Server) queueRead(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		qs, err := state.Queues(txn, ws)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(qs, func(q *structs.Queue) bool { return q.Name == name })
		if i < 0 {
			return nil, notFound("queue %q not found", name)
		}
		u, err := readQueueUsage(txn, ws, qs)
		if err != nil {
			return nil, err
		}
		out := u.status(qs[i], true)
		if out.Usage != nil {
			out.Usage.Jobs = slices.DeleteFunc(out.Usage.Jobs, func(j *structs.QueueJob) bool {
				return s.allowNamespace(r, j.Namespace, acl.CapListJobs) != nil
			})
		}
		return out, nil
	}, queueUsageTables...))
}

// decodeQueues reads a QueueUpsertRequest and checks what can be checked
// of its queues without the state (state.CanonicalQueues): a 400 that
// gives each problem's path ("queue[1].quota.gpu[0].nominal: ...").
func decodeQueues(r *http.Request) ([]*structs.Queue, error) {
	var req structs.QueueUpsertRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if len(req.Queues) == 0 {
		return nil, badRequest("request has no Queues")
	}
	return state.CanonicalQueues(req.Queues)
}

// checkQueueRequest is what a follower checks of an upsert before it
// forwards it: the body, and the queues as they are. Conflicts with the
// stored queues are the leader's to check, from its own state.
func (s *Server) checkQueueRequest(r *http.Request) error {
	_, err := decodeQueues(r)
	return err
}

// queueUpsert answers PUT and POST /v1/queues: it creates or replaces the
// request's queues, all or none, and answers them as stored. Everything
// the FSM checks is checked first against the leader's state
// (state.CheckQueues), so that a request the FSM would refuse is answered
// 400 or 409 without a log entry; the FSM checks again when it applies
// the entry, in case the queues changed in between.
func (s *Server) queueUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	queues, err := decodeQueues(r)
	if err != nil {
		return nil, err
	}
	queues, err = state.CheckQueues(s.State().Txn(), queues)
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		q.CreateIndex, q.ModifyIndex = 0, 0
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.QueueUpsertType, &fsm.QueueUpsertRequest{Queues: queues})
	if err != nil {
		return nil, err
	}
	txn := s.State().Txn()
	out := &structs.QueueUpsertResponse{Index: index, Queues: make([]*structs.Queue, 0, len(queues))}
	for _, q := range queues {
		stored, err := state.QueueByName(txn, nil, q.Name)
		if err != nil {
			return nil, err
		}
		if stored == nil {
			// Deleted by a later entry already.
			continue
		}
		out.Queues = append(out.Queues, stored)
	}
	s.log.Info("queues upserted", "count", len(queues), "index", index)
	return out, nil
}

// queueDelete answers DELETE /v1/queue/<name>: 404 for a queue that does
// not exist, answered from the leader's state without a log entry.
func (s *Server) queueDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	if q, err := state.QueueByName(s.State().Txn(), nil, name); err != nil {
		return nil, err
	} else if q == nil {
		return nil, notFound("queue %q not found", name)
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.QueueDeleteType, &fsm.QueueDeleteRequest{Names: []string{name}})
	if err != nil {
		return nil, err
	}
	s.log.Info("queue deleted", "queue", name, "index", index)
	return map[string]uint64{"Index": index}, nil
}
