package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func writeJSON(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// metricsHandler serves metrics in Prometheus' text format.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	if f := r.URL.Query().Get("format"); f != "" && f != "prometheus" {
		http.Error(w, fmt.Sprintf("format %q is not supported; use prometheus", f), http.StatusBadRequest)
		return
	}
	// go-metrics' series (the default registry) and this server's
	// per-job and per-queue series.
	jobs := prometheus.NewRegistry()
	jobs.MustRegister(&jobCollector{s: s}, &queueCollector{s: s})
	promhttp.HandlerFor(prometheus.Gatherers{prometheus.DefaultGatherer, jobs}, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// eventStream streams events as newline-delimited JSON, those committed
// after the Raft index ?index= (0 for every event kept) and selected by
// ?job=, ?namespace= and ?filter= as GET /v1/events, until the client goes
// away, like Nomad's /v1/event/stream.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) {
	if _, err := eventParams(r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	bw := bufio.NewWriter(w)
	q := r.URL.Query()
	for {
		res, last, err := state.BlockingQuery(r.Context(), s.State, 0, 0, func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
			return s.events(txn, ws, r)
		})
		if err != nil {
			return
		}
		for _, e := range res.([]*structs.Event) {
			writeJSON(bw, e)
		}
		if bw.Flush() != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		q.Set("index", fmt.Sprint(last))
		r.URL.RawQuery = q.Encode()
		// Wait for the next event, or for the client to leave.
		_, _, err = state.BlockingQuery(r.Context(), s.State, last, time.Hour, func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
			evs, err := state.Events(txn, ws, 0)
			if err != nil || len(evs) == 0 {
				return nil, last, err
			}
			return nil, max(last, evs[len(evs)-1].Index), nil
		})
		if err != nil || r.Context().Err() != nil {
			return
		}
	}
}

// snapshotSave streams a new Raft snapshot of the state: the FSM's rows as
// Persist writes them, after a JSON header line with the snapshot's
// metadata. Any server can save one.
func (s *Server) snapshotSave(w http.ResponseWriter, r *http.Request) {
	f := s.raft.Snapshot()
	if err := f.Error(); err != nil {
		http.Error(w, "take snapshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	meta, rc, err := f.Open()
	if err != nil {
		http.Error(w, "open snapshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Caravan-Index", fmt.Sprint(meta.Index))
	if err := writeJSON(w, meta); err != nil {
		return
	}
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Warn("failed to send snapshot", "error", err)
	}
}

// snapshotRestore replaces the cluster's state with a saved snapshot; the
// leader restores it through Raft, so every server gets it.
func (s *Server) snapshotRestore(w http.ResponseWriter, r *http.Request) {
	if !s.IsLeader() {
		s.forward(w, r)
		return
	}
	br := bufio.NewReader(http.MaxBytesReader(w, r.Body, maxSnapshotBytes))
	line, err := br.ReadBytes('\n')
	var meta raft.SnapshotMeta
	if err == nil {
		err = json.Unmarshal(line, &meta)
	}
	if err != nil || meta.Size <= 0 {
		http.Error(w, fmt.Sprintf("not a Caravan snapshot: the first line must be its JSON metadata (%v)", err), http.StatusBadRequest)
		return
	}
	// Check the snapshot decodes before Raft installs it: Raft panics
	// when the FSM fails to restore one. The FSM keeps what it decoded.
	body, err := io.ReadAll(io.LimitReader(br, meta.Size+1))
	if err != nil || int64(len(body)) != meta.Size {
		http.Error(w, fmt.Sprintf("snapshot is truncated or too long: want %d bytes after the header, got %d (%v)", meta.Size, len(body), err), http.StatusBadRequest)
		return
	}
	// One restore at a time: the FSM keeps one prepared snapshot.
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	if err := s.fsm.Prepare(body); err != nil {
		http.Error(w, "snapshot does not decode: "+err.Error(), http.StatusBadRequest)
		return
	}
	defer s.fsm.Unprepare()
	if err := s.raft.Restore(&meta, bytes.NewReader(body), time.Minute); err != nil {
		http.Error(w, "restore snapshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// The leader loop rebuilds its view from the restored state.
	s.restartLeader()
	w.WriteHeader(http.StatusOK)
}

// restartLeader makes the leader loop, if the server runs one, establish
// itself again, after the state was replaced under it; it returns once
// the loop was restarted.
func (s *Server) restartLeader() {
	done := make(chan struct{})
	select {
	case s.restart <- done:
		<-done
	case <-s.shutdownCtx.Done():
	}
}

// dryRunRequest carries a `job plan` to the leader loop, which owns the
// scheduler.
type dryRunRequest struct {
	job   *structs.Job
	reply chan dryRunReply
}

type dryRunReply struct {
	plan *structs.Plan
	err  error
}

// dryRun asks the leader loop for the plan with job added.
func (s *Server) dryRun(ctx context.Context, job *structs.Job) (*structs.Plan, error) {
	req := dryRunRequest{job: job, reply: make(chan dryRunReply, 1)}
	select {
	case s.dryRuns <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("%w: the leader loop is not running yet", ErrNotLeader)
	}
	select {
	case rep := <-req.reply:
		return rep.plan, rep.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
