package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/caravan-sched/caravan/structs"
)

// Bounds on how long a client may take to send a request. Headers are
// bounded by the http.Server's ReadHeaderTimeout; a body must arrive within
// bodyReadTimeout of the request's start. Responses are not bounded:
// blocking queries last minutes.
const (
	bodyReadTimeout = 30 * time.Second
	idleTimeout     = 2 * time.Minute
)

// bodyDeadline bounds the time to read r's body, for the methods that
// send one. A client trickling its body is cut off at the deadline instead
// of holding a goroutine and a connection for as long as it likes.
func bodyDeadline(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return
	}
	// An error means the connection cannot take deadlines (HTTP/2 or a
	// test recorder): the body is still bounded by maxBodyBytes.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
}

// writeChecked wraps a write endpoint that needs n and whose body a
// follower checks before forwarding it: a request the leader would refuse
// as bad is answered here, so that hostile input is parsed and bounded
// where it enters, and the leader never evaluates a jobspec a follower
// could reject. The caller's token is checked first: a caller without the
// right learns nothing of why its request is bad. A token this follower
// does not know yet goes to the leader unread, which checks it before it
// reads the body.
func (s *Server) writeChecked(n need, fn endpoint, check func(r *http.Request) error) http.HandlerFunc {
	inner := s.write(s.allow(n, fn))
	return func(w http.ResponseWriter, r *http.Request) {
		bodyDeadline(w, r)
		if !s.IsLeader() {
			err := s.callerMay(r, n)
			if err == nil {
				err = checkBody(w, r, check)
			} else if errors.Is(err, errTokenNotFound) {
				err = nil
			}
			if err != nil {
				code := errorCode(err)
				s.log.Debug("request refused before forwarding", "method", r.Method, "path", r.URL.Path, "code", code, "error", err)
				http.Error(w, err.Error(), code)
				return
			}
		}
		inner(w, r)
	}
}

// checkBody reads r's body, bounded, runs fn on a copy, and puts the body back
// for the endpoint or the forward.
func checkBody(w http.ResponseWriter, r *http.Request, fn func(r *http.Request) error) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("request body is larger than %d bytes: %w", tooBig.Limit, err)
		}
		return badRequest("read request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	err = fn(r)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return err
}

// checkJobRequest parses and validates a job register or plan request as
// the leader would.
func (s *Server) checkJobRequest(r *http.Request) error {
	var req structs.JobRegisterRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	job, err := s.registeredJob(&req)
	if err != nil {
		return err
	}
	if id := r.PathValue("id"); id != "" && id != job.ID {
		return badRequest("the path names job %q but the body job %q", id, job.ID)
	}
	return nil
}
