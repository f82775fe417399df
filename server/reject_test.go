package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// rejecting is a cluster's view of its declared jobs that records the
// rejections the leader asks it to write.
type rejecting struct {
	declarations
	rmu      sync.Mutex
	rejected []string // "<job>@<index>: <why>"
}

func (r *rejecting) Reject(_ context.Context, decl *structs.Declaration, why string) error {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.rejected = append(r.rejected, fmt.Sprintf("%s@%d: %s", decl.JobID, decl.Index, why))
	return nil
}

func (r *rejecting) calls() []string {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return append([]string(nil), r.rejected...)
}

var _ Rejecter = (*rejecting)(nil)

// TestLeader_RejectedDeclarations: a declaration the leader rejects
// becomes a job record with status rejected and the diagnostic, is
// stopped in the cluster once per version unless Caravan runs the job,
// and a later valid version registers over it.
func TestLeader_RejectedDeclarations(t *testing.T) {
	disc := &rejecting{declarations: declarations{decls: map[structs.JobKey]*structs.Declaration{}}}
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Discoverer = disc
	cfg.Interval = time.Hour
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)

	errs := []string{"bad (submitted to Nomad, version 0):12:9: Missing required argument", "bad (submitted to Nomad, version 0):18:13: Unsupported argument; see the docs"}
	why := strings.Join(errs, "; ")
	disc.set("bad", &structs.Declaration{Kind: structs.DeclaredInvalid, Index: 21, Name: "bad", Message: why, Errors: errs})
	agent.WaitFor(t, 10*time.Second, "job bad rejected", jobStatus(t, c, "bad", structs.JobStatusRejected))
	job, _, err := c.Jobs().Info("bad", nil)
	must.NoError(t, err)
	must.Eq(t, strings.Join(errs, "\n"), job.StatusDescription, must.Sprint("one error a line"))
	evs, _, err := c.Events("bad", nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, evs)
	must.Eq(t, "version at cluster index 21 not run by Caravan: "+why, evs[0].Message)
	must.Eq(t, 21, job.Nomad.JobModifyIndex)
	stubs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, stubs)
	must.Eq(t, structs.JobStatusRejected, stubs[0].Status)
	sum, _, err := c.Jobs().Summary("bad", nil)
	must.NoError(t, err)
	must.Nil(t, sum.Placement, must.Sprint("nothing plans a rejected job"))

	// A conflicting declaration is stopped in the cluster; the job
	// submitted to Caravan keeps its record.
	_, _, err = c.Jobs().Register(demoJob(t, "api"), nil)
	must.NoError(t, err)
	disc.set("api", declaredDemo(t, "api", 22, 4))
	// A running declared job given an invalid version (whose groups Nomad
	// runs in place of Caravan's already) ends, and is rejected and
	// stopped in the cluster as well.
	disc.set("d", declaredDemo(t, "d", 23, 2))
	agent.WaitFor(t, 10*time.Second, "job d running", jobStatus(t, c, "d", structs.JobStatusRunning))
	disc.set("d", &structs.Declaration{Kind: structs.DeclaredInvalid, Index: 24, Message: "d: Not a batch job"})
	agent.WaitFor(t, 10*time.Second, "job d rejected", jobStatus(t, c, "d", structs.JobStatusRejected))
	agent.WaitFor(t, 10*time.Second, "the rejections written", func() error {
		if n := len(disc.calls()); n < 3 {
			return fmt.Errorf("%d rejections written", n)
		}
		return nil
	})
	must.Eq(t, []string{"bad@21: " + why, "api@22: Caravan already runs a job of this ID, submitted to its API", "d@24: d: Not a batch job"}, disc.calls())
	job, _, err = c.Jobs().Info("d", nil)
	must.NoError(t, err)
	must.Eq(t, "d: Not a batch job", job.StatusDescription)
	api, _, err := c.Jobs().Info("api", nil)
	must.NoError(t, err)
	must.Nil(t, api.Nomad)
	must.NotEq(t, structs.JobStatusRejected, api.Status)

	// The fixed version registers anew over the rejection.
	disc.set("bad", declaredDemo(t, "bad", 30, 2))
	agent.WaitFor(t, 10*time.Second, "job bad running", jobStatus(t, c, "bad", structs.JobStatusRunning))
	job, _, err = c.Jobs().Info("bad", nil)
	must.NoError(t, err)
	must.Eq(t, "", job.StatusDescription)
	must.Eq(t, 30, job.Nomad.JobModifyIndex)
	must.SliceLen(t, 3, disc.calls(), must.Sprint("each rejection written once"))
}

// TestRefusal: only a failure that is the job's own rejects a declared
// job (and stops it in the cluster); Raft's and the state's failures are
// tried again.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&CodedError{Code: http.StatusUnprocessableEntity, Err: planner.ErrNeverFits}, true},
		{fmt.Errorf("register job %q: %w", "x", state.ErrJobElsewhere), true},
		{fmt.Errorf("commit: %w", ErrNotLeader), false},
		{fmt.Errorf("commit JobRegister: %w", raft.ErrEnqueueTimeout), false},
		{&CodedError{Code: http.StatusServiceUnavailable, Err: errors.New("later")}, false},
	} {
		must.EqOp(t, tc.want, refusal(tc.err), must.Sprint(tc.err))
	}
}
