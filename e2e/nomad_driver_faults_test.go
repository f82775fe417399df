//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// faultProxy is a reverse proxy on loopback in front of a Nomad agent
// that answers 500 to the reads of one job (the job and its versions,
// allocations and the like) for a while, as a Nomad server under load
// or in an election does.
type faultProxy struct {
	// URL is the proxy's address, for Caravan's nomad block.
	URL string

	mu sync.Mutex
	// job's reads fail until until; failed counts the reads answered 500.
	job    string
	until  time.Time
	failed int
}

// startFaultProxy starts a proxy to target; it stops when the test ends.
func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	must.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &faultProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.fails(r) {
			http.Error(w, "injected by the test: Nomad cannot read the job now", http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// fail answers the reads of job with 500 for d.
func (p *faultProxy) fail(job string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.job, p.until = job, time.Now().Add(d)
}

// fails reports whether a request is answered 500, and counts it.
func (p *faultProxy) fails(r *http.Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method != http.MethodGet || p.job == "" || time.Now().After(p.until) {
		return false
	}
	if r.URL.Path != "/v1/job/"+p.job && !strings.HasPrefix(r.URL.Path, "/v1/job/"+p.job+"/") {
		return false
	}
	p.failed++
	return true
}

// failing returns whether the reads fail still, and how many did.
func (p *faultProxy) failing() (bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.until), p.failed
}

// TestNomadDriverFaults_ReadsFailDuringRerun re-runs a job declared in
// Nomad, with a lower max, while Nomad answers Caravan's reads of it with
// 500 for 40 s (Caravan reaches Nomad through a proxy; the user's CLI
// does not). Caravan keeps the job, as it was, throughout: no JobStopped
// "purged from the cluster" and no new run, and once the reads work it
// takes the new version as version 1 of the same run and runs it at the
// new max.
func TestNomadDriverFaults_ReadsFailDuringRerun(t *testing.T) {
	t.Parallel()
	var proxy *faultProxy
	nc, trainer, c := trainingOnNomadWith(t, func(nc *agent.NomadCluster, checkpoints string) string {
		proxy = startFaultProxy(t, nc.Address)
		through := *nc
		through.Address = proxy.URL
		return nomadAgentBody(&through, checkpoints, "drf")
	})
	cli := nomadCLI{addr: nc.Address}

	cli.jobRun(t, "f", trainerFile{id: "f", trainer: trainer, maxWorkers: 4, long: true}.String())
	waitEvent(t, c, "f", api.EventTasksRunning, 1, 2*time.Minute)
	waitWorkers(t, c, "f", 4)

	const window = 40 * time.Second
	proxy.fail("f", window)
	cli.jobRun(t, "f", trainerFile{id: "f", trainer: trainer, maxWorkers: 2, long: true}.String())
	var stopped []string
	agent.WaitFor(t, window+30*time.Second, "the reads of job f to work again", func() error {
		for _, ev := range events(t, c, "f", api.EventJobStopped) {
			stopped = append(stopped, ev.Message)
		}
		if job, _, err := c.Jobs().Info("f", nil); err == nil && job.Status != api.JobStatusRunning {
			stopped = append(stopped, "status "+job.Status+": "+job.StatusDescription)
		}
		if len(stopped) > 0 {
			return nil // fails below
		}
		if failing, n := proxy.failing(); failing {
			return fmt.Errorf("reads of job f fail, %d so far", n)
		}
		return nil
	})
	must.SliceEmpty(t, stopped, must.Sprint("Caravan stopped the job while Nomad could not read it"))
	_, failed := proxy.failing()
	must.Positive(t, failed, must.Sprint("Caravan read the job while the reads failed"))
	t.Logf("%d reads of job f answered 500 in %s", failed, window)

	agent.WaitFor(t, 2*time.Minute, "job f at version 1 running 2 workers at most", func() error {
		sum := summary(t, c, "f")
		switch o := sum.Observed; {
		case sum.Job.Version != 1:
			return fmt.Errorf("job f at version %d", sum.Job.Version)
		case o == nil || o.Placement == nil || o.Change == nil:
			return fmt.Errorf("observed: %+v", o)
		case o.Change.Phase != api.ChangeDone || o.Placement.NumWorkers > 2:
			return fmt.Errorf("%d workers run; change %s: %s", o.Placement.NumWorkers, o.Change.Phase, o.Change.Message)
		}
		return nil
	})
	sum := summary(t, c, "f")
	must.Eq(t, api.JobStatusRunning, sum.Job.Status)
	must.Eq(t, 2, sum.Job.Elastic.Workers.Max)
	must.SliceEmpty(t, events(t, c, "f", api.EventJobStopped), must.Sprint("the job was stopped"))
	versions, _, err := c.Jobs().Versions("f", nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, versions, must.Sprint("the versions of one run: the first and the re-run"))
}
