// Package collectors finds the metrics collectors registered in Consul and
// pulls trainers' samples from them for the leader (DESIGN.md §3): a
// blocking query on the collector service's healthy instances starts and
// stops one scraper per collector; each scraper long-polls its collector's
// GET /v1/samples with backoff and jitter; samples are checked, de-duplicated
// and handed to the leader through the server's MetricsSource interface.
package collectors

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/cenkalti/backoff/v4"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// DefaultService is the Consul service collectors register as.
const DefaultService = "caravan-collector"

// Config configures a Source.
type Config struct {
	Consul *consulapi.Client
	// Service is the collectors' Consul service; default
	// "caravan-collector".
	Service string
	// Wait bounds a long poll of a collector (default 30s) and a blocking
	// query of Consul (default 1m).
	Wait time.Duration
	// MaxPending bounds the samples held for the leader per job (default
	// 4096); beyond it every other held sample is dropped, keeping the
	// whole span with less detail, as Optimus thins old samples.
	MaxPending int
	HTTPClient *http.Client
	Logger     hclog.Logger
}

func (c *Config) setDefaults() {
	if c.Service == "" {
		c.Service = DefaultService
	}
	if c.Wait == 0 {
		c.Wait = 30 * time.Second
	}
	if c.MaxPending == 0 {
		c.MaxPending = 4096
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.Wait + 10*time.Second}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Source gathers samples from every healthy collector while Run runs. It
// satisfies the server's MetricsSource: Samples returns what was gathered
// after a cursor.
//
// A cursor is a sequence number this Source gave a sample when it gathered
// it; the leader commits the cursor it was last handed, and a new leader's
// Source is asked with its predecessor's. A cursor this Source did not hand
// out says nothing about what it holds, so it drops nothing for it: it
// numbers everything it holds afresh above that cursor and above any
// number it gave before, and hands all of it out (the store de-duplicates
// samples delivered twice). Cursors therefore increase strictly across
// leaders whatever their clocks say. Sequence numbers start from the wall
// clock only so that two Sources' cursors are unlikely to coincide: a
// foreign cursor equal to one this Source handed out would drop samples.
type Source struct {
	cfg Config
	log hclog.Logger
	// now is the clock; tests set it.
	now func() time.Time

	mu      sync.Mutex
	pending []entry
	// seq is the greatest sequence number given out; it never decreases.
	seq uint64
	// handed holds, in increasing order, the cursors Samples returned that
	// the leader may still pass back: the one it passed last and those
	// handed out since (at most maxHanded). A cursor not in it is foreign.
	handed []uint64
	// seen de-duplicates samples by (namespace, job, step, time): a
	// collector read again from the start, after it flapped in Consul,
	// gives the same samples with the same stamps. It holds when each key
	// was seen (Unix nanoseconds); keys older than dedupWindow are
	// forgotten.
	seen map[key]int64
	// flagged counts, per collector, the samples dropped as implausible;
	// a collector's count is forgotten when it leaves Consul.
	flagged map[string]int
	// checkpoints holds, per collector and job, the newest checkpoint step
	// it reported: no later sample of it can be at an earlier step. An
	// entry is forgotten when its collector leaves Consul, or when the
	// collector sent no sample of the job for dedupWindow.
	checkpoints map[checkpointKey]checkpoint
}

// maxHanded bounds the cursors a Source remembers handing out beyond the
// last one passed back: one accrues per Samples call whose cursor the
// leader did not commit. A forgotten cursor, passed back, counts as
// foreign: the samples after it are handed out again, which is harmless.
const maxHanded = 64

type entry struct {
	seq uint64
	smp structs.Sample
}

// checkpointKey names the checkpoints one collector reported for one job.
type checkpointKey struct {
	collector string
	job       structs.JobKey
}

// checkpoint is the newest checkpoint step a collector reported for a job,
// and when it last sent a sample of the job (Unix nanoseconds).
type checkpoint struct {
	step    int64
	updated int64
}

type key struct {
	ns, job string
	step    int64
	time    int64
}

// New returns a Source; call Run to start gathering.
func New(cfg Config) *Source {
	cfg.setDefaults()
	return &Source{
		cfg:         cfg,
		log:         cfg.Logger.Named("collectors"),
		now:         time.Now,
		seen:        map[key]int64{},
		flagged:     map[string]int{},
		checkpoints: map[checkpointKey]checkpoint{},
	}
}

// Samples returns the samples gathered after cursor, and the cursor to pass
// next. For a cursor it handed out, it drops the samples at or before it,
// which the leader has committed. For any other cursor (0, a predecessor's,
// or one it forgot) it drops nothing: it numbers what it holds above both
// that cursor and every number it gave before, and returns all of it.
func (s *Source) Samples(_ context.Context, cursor uint64) ([]structs.Sample, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ours := slices.BinarySearch(s.handed, cursor); ours {
		s.handed = s.handed[i:]
		i = 0
		for i < len(s.pending) && s.pending[i].seq <= cursor {
			i++
		}
		s.pending = s.pending[i:]
	} else {
		s.rebase(cursor)
	}
	out := make([]structs.Sample, len(s.pending))
	for j, e := range s.pending {
		out[j] = e.smp
	}
	next := cursor
	if len(s.pending) > 0 {
		next = s.pending[len(s.pending)-1].seq
	}
	if len(s.handed) == 0 || s.handed[len(s.handed)-1] != next {
		s.handed = append(s.handed, next)
	}
	if len(s.handed) > maxHanded {
		// Keep the cursor passed last: the leader passes it again
		// until it commits a later one.
		s.handed = slices.Delete(s.handed, 1, len(s.handed)-maxHanded+1)
	}
	return out, next, nil
}

// rebase adopts a cursor this Source did not hand out: the samples it
// holds are numbered afresh above the cursor and above every number given
// before, so that none is dropped for it and no number is given twice.
// The cursors handed out before no longer describe what it holds and are
// forgotten. s.mu is held.
func (s *Source) rebase(cursor uint64) {
	base := max(s.seq, cursor)
	for i := range s.pending {
		s.pending[i].seq = base + uint64(i) + 1
	}
	s.seq = base + uint64(len(s.pending))
	s.handed = []uint64{cursor}
}

// Flagged returns how many samples each collector sent that were dropped
// as implausible.
func (s *Source) Flagged() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.flagged))
	for k, v := range s.flagged {
		out[k] = v
	}
	return out
}

// Run watches Consul for collectors and scrapes each until ctx ends. A
// collector not among the healthy instances is not scraped, and its
// flagged count and checkpoints are forgotten.
func (s *Source) Run(ctx context.Context) {
	scrapers := map[string]*scraper{}
	var wg sync.WaitGroup
	defer func() {
		for _, sc := range scrapers {
			sc.cancel()
		}
		wg.Wait()
	}()
	var index uint64
	retry := newBackoff()
	for ctx.Err() == nil {
		q := (&consulapi.QueryOptions{WaitIndex: index, WaitTime: s.cfg.Wait}).WithContext(ctx)
		entries, meta, err := s.cfg.Consul.Health().Service(s.cfg.Service, "", true, q)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("cannot list collectors in Consul; retrying", "error", err)
				sleep(ctx, retry)
			}
			continue
		}
		retry.Reset()
		if meta.LastIndex < index {
			index = 0 // Consul's index went back: start over
		} else {
			index = meta.LastIndex
		}
		live := map[string]string{}
		for _, e := range entries {
			host := e.Service.Address
			if host == "" {
				host = e.Node.Address
			}
			live[e.Service.ID] = net.JoinHostPort(host, strconv.Itoa(e.Service.Port))
		}
		for id, sc := range scrapers {
			if _, ok := live[id]; !ok {
				s.log.Info("collector gone", "collector", id)
				sc.cancel()
				<-sc.done
				delete(scrapers, id)
			}
		}
		// No scraper of a collector gone adds anything now, so what is
		// forgotten stays forgotten.
		s.forgetAllBut(live)
		for id, addr := range live {
			if _, ok := scrapers[id]; ok {
				continue
			}
			s.log.Info("collector found", "collector", id, "address", addr)
			sctx, cancel := context.WithCancel(ctx)
			sc := &scraper{cancel: cancel, done: make(chan struct{})}
			scrapers[id] = sc
			wg.Go(func() {
				defer close(sc.done)
				s.scrape(sctx, id, addr)
			})
		}
	}
}

// scraper is a running scrape of one collector: cancel stops it, and done
// is closed when it stopped.
type scraper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// forgetAllBut drops what the source holds about the collectors not in
// live (the healthy instances, by service ID): their flagged counts and
// their checkpoints, including those of collectors that left while
// another server led.
func (s *Source) forgetAllBut(live map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := func(collector string) bool { _, ok := live[collector]; return !ok }
	maps.DeleteFunc(s.flagged, func(collector string, _ int) bool { return gone(collector) })
	maps.DeleteFunc(s.checkpoints, func(k checkpointKey, _ checkpoint) bool { return gone(k.collector) })
}

// page is the part of a collector's GET /v1/samples answer the source
// reads.
type page struct {
	Samples []structs.Sample
	Next    uint64
	Reset   bool
}

// scrape long-polls one collector until ctx ends, backing off with jitter
// while it fails.
func (s *Source) scrape(ctx context.Context, id, addr string) {
	var since uint64
	retry := newBackoff()
	for ctx.Err() == nil {
		p, err := s.poll(ctx, addr, since)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("cannot read collector; backing off", "collector", id, "error", err)
				sleep(ctx, retry)
			}
			continue
		}
		retry.Reset()
		since = p.Next
		s.add(id, p.Samples)
	}
}

func (s *Source) poll(ctx context.Context, addr string, since uint64) (*page, error) {
	u := url.URL{Scheme: "http", Host: addr, Path: "/v1/samples",
		RawQuery: url.Values{"since": {strconv.FormatUint(since, 10)}, "wait": {s.cfg.Wait.String()}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u.Path, resp.Status)
	}
	var p page
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return nil, fmt.Errorf("decode samples of %s: %w", addr, err)
	}
	return &p, nil
}

// add keeps the samples that are valid, plausible and new.
func (s *Source) add(collector string, smps []structs.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UnixNano()
	for _, smp := range smps {
		if smp.Namespace == "" {
			smp.Namespace = structs.DefaultNamespace
		}
		ck := checkpointKey{collector: collector, job: structs.NewJobKey(smp.Namespace, smp.JobID)}
		cp := s.checkpoints[ck]
		why := implausible(&smp)
		if why == "" && smp.Step < cp.step {
			why = fmt.Sprintf("step %d is before checkpoint %d the same collector reported", smp.Step, cp.step)
		}
		if why != "" {
			s.flagged[collector]++
			s.log.Warn("dropped an implausible sample", "collector", collector, "job_id", smp.JobID, "step", smp.Step, "reason", why)
			continue
		}
		s.checkpoints[ck] = checkpoint{step: max(cp.step, smp.CheckpointStep), updated: now}
		k := key{smp.Namespace, smp.JobID, smp.Step, smp.Time}
		if _, dup := s.seen[k]; dup {
			continue
		}
		s.seen[k] = now
		s.seq = max(s.seq+1, uint64(now))
		s.pending = append(s.pending, entry{seq: s.seq, smp: smp})
	}
	s.bound(now)
}

// maxSamplesPerSecond is beyond any real trainer: a collector that
// reports more is lying or broken.
const maxSamplesPerSecond = 1e9

// implausible says why a sample cannot be believed, or "".
func implausible(smp *structs.Sample) string {
	if err := smp.Validate(); err != nil {
		return err.Error()
	}
	if smp.StepTimeS > 0 && float64(smp.Samples)/smp.StepTimeS > maxSamplesPerSecond {
		return fmt.Sprintf("%d samples in %gs is faster than any trainer", smp.Samples, smp.StepTimeS)
	}
	return ""
}

// bound keeps at most MaxPending samples per job by thinning each over-full
// job's older half, forgets de-duplication keys older than dedupWindow,
// and forgets the checkpoints of a job its collector sent no sample of for
// dedupWindow. now is in Unix nanoseconds; s.mu is held.
func (s *Source) bound(now int64) {
	count := map[structs.JobKey]int{}
	for _, e := range s.pending {
		count[structs.NewJobKey(e.smp.Namespace, e.smp.JobID)]++
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(count)), func(n int) bool { return n > s.cfg.MaxPending }) {
		seen := map[structs.JobKey]int{}
		kept := s.pending[:0]
		for _, e := range s.pending {
			j := structs.NewJobKey(e.smp.Namespace, e.smp.JobID)
			seen[j]++
			if n := count[j]; n > s.cfg.MaxPending && seen[j] <= n/2 && seen[j]%2 == 0 {
				continue
			}
			kept = append(kept, e)
		}
		s.pending = kept
	}
	horizon := now - int64(dedupWindow)
	if len(s.seen) > 4*s.cfg.MaxPending {
		maps.DeleteFunc(s.seen, func(_ key, at int64) bool { return at < horizon })
	}
	maps.DeleteFunc(s.checkpoints, func(_ checkpointKey, cp checkpoint) bool { return cp.updated < horizon })
}

// dedupWindow is how long a sample is remembered for de-duplication: longer
// than a collector takes to be found again after it flapped.
const dedupWindow = 10 * time.Minute

// newBackoff waits exponentially longer, from about 250ms to about 10s
// (±50% jitter), for as long as it is asked.
func newBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMaxInterval(10*time.Second),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxElapsedTime(0))
}

// sleep waits b's next interval, or until ctx ends.
func sleep(ctx context.Context, b backoff.BackOff) {
	t := time.NewTimer(b.NextBackOff())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
