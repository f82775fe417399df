package server

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// declarations is a cluster's view of its declared jobs that a test
// changes by hand, as users change Nomad jobs; e2e's TestNomadJobRun_*
// run the nomad driver's against real Nomad.
type declarations struct {
	mu    sync.Mutex
	index uint64
	decls map[structs.JobKey]*structs.Declaration
}

func (d *declarations) Declared(context.Context) (map[structs.JobKey]*structs.Declaration, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.decls), d.index, nil
}

// set replaces the declaration of a job (nil removes it) at the next index.
func (d *declarations) set(id string, decl *structs.Declaration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.index++
	key := structs.NewJobKey(structs.DefaultNamespace, id)
	if decl == nil {
		delete(d.decls, key)
		return
	}
	decl.Namespace, decl.JobID = key.Namespace, key.ID
	d.decls[key] = decl
}

// declaredDemo is the demo job as a declaration at a cluster index, with
// at most maxWorkers workers.
func declaredDemo(t *testing.T, id string, index uint64, maxWorkers int) *structs.Declaration {
	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	hcl := strings.Replace(string(src), `job "demo"`, fmt.Sprintf("job %q", id), 1)
	hcl = strings.Replace(hcl, "max = 4", fmt.Sprintf("max = %d", maxWorkers), 1)
	job, diags := jobspec.Parse(&jobspec.Config{Filename: "demo.hcl", Src: []byte(hcl)})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	job.Nomad = &structs.NomadSource{JobModifyIndex: index, Groups: map[string]string{structs.RoleWorker: "worker"}, Template: []byte("{}")}
	return &structs.Declaration{Kind: structs.DeclaredJob, Index: index, Job: job}
}

// TestLeader_DeclaredJobs: the leader registers a job declared in the
// cluster once per declaring version, updates it, refuses the other way
// in for it, rejects invalid and conflicting declarations once each, and
// stops declared jobs that are handed back, stopped or purged.
func TestLeader_DeclaredJobs(t *testing.T) {
	disc := &declarations{decls: map[structs.JobKey]*structs.Declaration{}}
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Discoverer = disc
	cfg.Interval = time.Hour
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)

	disc.set("d", declaredDemo(t, "d", 10, 4))
	agent.WaitFor(t, 10*time.Second, "job d running", jobStatus(t, c, "d", structs.JobStatusRunning))
	job, _, err := c.Jobs().Info("d", nil)
	must.NoError(t, err)
	must.Eq(t, uint64(10), job.Nomad.JobModifyIndex)

	_, _, err = c.Jobs().Register(demoJob(t, "d"), nil)
	must.ErrorContains(t, err, "declared in Nomad", must.Sprint("a declared job changes only where it was declared"))

	// The same version seen again registers nothing; a new one does.
	disc.set("other", &structs.Declaration{Kind: structs.DeclaredPlain, Index: 3})
	disc.set("d", declaredDemo(t, "d", 12, 2))
	agent.WaitFor(t, 10*time.Second, "job d at version 1", func() error {
		job, _, err := c.Jobs().Info("d", nil)
		if err != nil {
			return err
		}
		if job.Version != 1 || job.Elastic.Workers.Max != 2 {
			return fmt.Errorf("version %d, max %d", job.Version, job.Elastic.Workers.Max)
		}
		return nil
	})

	_, _, err = c.Jobs().Register(demoJob(t, "api"), nil)
	must.NoError(t, err)
	disc.set("api", declaredDemo(t, "api", 20, 4))
	disc.set("bad", &structs.Declaration{Kind: structs.DeclaredInvalid, Index: 21, Message: "worker/worker policy: Invalid training.mode"})
	disc.set("e", declaredDemo(t, "e", 22, 1))
	agent.WaitFor(t, 10*time.Second, "job e registered", jobStatus(t, c, "e", structs.JobStatusRunning))
	rejected := func(job string) int {
		evs, _, err := c.Events(job, nil)
		must.NoError(t, err)
		n := 0
		for _, e := range evs {
			if e.Type == structs.EventJobRejected {
				n++
			}
		}
		return n
	}
	must.Eq(t, 1, rejected("bad"))
	must.Eq(t, 1, rejected("api"), must.Sprint("a job submitted to Caravan is not taken over"))
	api, _, err := c.Jobs().Info("api", nil)
	must.NoError(t, err)
	must.Nil(t, api.Nomad)

	disc.set("d", &structs.Declaration{Kind: structs.DeclaredPlain, Index: 30})
	disc.set("e", nil)
	for id, why := range map[string]string{"d": "handed back", "e": "purged"} {
		agent.WaitFor(t, 10*time.Second, "job "+id+" stopped", jobStatus(t, c, id, structs.JobStatusStopped))
		job, _, err := c.Jobs().Info(id, nil)
		must.NoError(t, err)
		must.StrContains(t, job.StatusDescription, why)
	}
	must.Eq(t, 1, rejected("bad"), must.Sprint("an invalid version is reported once"))
	versions, _, err := c.Jobs().Versions("d", nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, versions)
}
