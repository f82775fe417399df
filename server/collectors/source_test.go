package collectors

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// TestPoll_NewerCollector: a page from a collector of a newer version,
// whose samples carry a field this server does not know, is read with
// the fields it knows, rather than stopping the scrape.
func TestPoll_NewerCollector(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"Samples": [{"JobID": "a", "Step": 3, "AFieldOfANewerVersion": 1}], "Next": 2}`))
	}))
	t.Cleanup(srv.Close)
	s := New(Config{})
	p, err := s.poll(context.Background(), strings.TrimPrefix(srv.URL, "http://"), 0)
	must.NoError(t, err)
	must.Eq(t, []structs.Sample{{JobID: "a", Step: 3}}, p.Samples)
	must.Eq(t, 2, p.Next)
}

// TestSamples_ForeignCursor: a Source asked with a cursor it did not hand
// out, as a new leader's Source is asked with the cursor its predecessor
// committed, returns every sample it gathered, and its cursors go on
// increasing from that one. Before, a predecessor whose clock ran an hour
// ahead committed a cursor above everything the new Source numbered, and
// the new leader dropped what it gathered for an hour.
func TestSamples_ForeignCursor(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cursor returns the predecessor's cursor, given the numbers
		// of the first and last sample the Source holds.
		cursor func(first, last uint64) uint64
	}{
		{"predecessor an hour ahead", func(_, last uint64) uint64 { return last + uint64(time.Hour) }},
		{"predecessor a moment ahead", func(first, _ uint64) uint64 { return first }},
		{"predecessor behind", func(first, _ uint64) uint64 { return first - 1 }},
		{"fresh cluster", func(uint64, uint64) uint64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			s.add("a", []structs.Sample{{JobID: "j", Step: 1, Time: 1}, {JobID: "j", Step: 2, Time: 2}, {JobID: "j", Step: 3, Time: 3}})
			cursor := tc.cursor(s.pending[0].seq, s.pending[len(s.pending)-1].seq)

			smps, next, err := s.Samples(context.Background(), cursor)
			must.NoError(t, err)
			must.Eq(t, []int64{1, 2, 3}, steps(smps))
			must.Greater(t, cursor, next)

			// The leader committed next: nothing is handed out twice.
			smps, again, err := s.Samples(context.Background(), next)
			must.NoError(t, err)
			must.SliceEmpty(t, smps)
			must.Eq(t, next, again)

			s.add("a", []structs.Sample{{JobID: "j", Step: 4, Time: 4}})
			smps, later, err := s.Samples(context.Background(), next)
			must.NoError(t, err)
			must.Eq(t, []int64{4}, steps(smps))
			must.Greater(t, next, later)
		})
	}
}

// TestSamples_OwnCursor: a cursor the Source handed out drops the samples
// at or before it, which the leader committed, and only those; one it
// handed out earlier, passed again after a commit that failed, still
// counts as its own.
func TestSamples_OwnCursor(t *testing.T) {
	s := New(Config{})
	s.add("a", []structs.Sample{{JobID: "j", Step: 1, Time: 1}})
	_, first, err := s.Samples(context.Background(), 0)
	must.NoError(t, err)
	s.add("a", []structs.Sample{{JobID: "j", Step: 2, Time: 2}})
	_, _, err = s.Samples(context.Background(), first) // not committed
	must.NoError(t, err)
	s.add("a", []structs.Sample{{JobID: "j", Step: 3, Time: 3}})
	smps, next, err := s.Samples(context.Background(), first)
	must.NoError(t, err)
	must.Eq(t, []int64{2, 3}, steps(smps))
	smps, _, err = s.Samples(context.Background(), next)
	must.NoError(t, err)
	must.SliceEmpty(t, smps)
}

// TestAdd_ForgetsStaleCheckpoints: a collector's checkpoint of a job it
// sent no sample of for dedupWindow is forgotten, so that the map does not
// grow with every job ever run; one it keeps reporting is kept.
func TestAdd_ForgetsStaleCheckpoints(t *testing.T) {
	s := New(Config{})
	now := time.Unix(1_700_000_000, 0)
	s.now = func() time.Time { return now }
	s.add("a", []structs.Sample{
		{JobID: "old", Step: 10, Time: 1, CheckpointStep: 10},
		{JobID: "kept", Step: 10, Time: 1, CheckpointStep: 10},
	})
	must.MapLen(t, 2, s.checkpoints)

	now = now.Add(dedupWindow / 2)
	s.add("a", []structs.Sample{{JobID: "kept", Step: 11, Time: 2}})
	now = now.Add(dedupWindow/2 + time.Second)
	s.add("a", []structs.Sample{{JobID: "kept", Step: 12, Time: 3}})
	must.MapLen(t, 1, s.checkpoints)
	cp, ok := s.checkpoints[checkpointKey{collector: "a", job: structs.NewJobKey("", "kept")}]
	must.True(t, ok)
	must.Eq(t, 10, cp.step)

	// The kept checkpoint still holds: a sample before it is flagged.
	s.add("a", []structs.Sample{{JobID: "kept", Step: 9, Time: 4}})
	must.Eq(t, map[string]int{"a": 1}, s.Flagged())
}

// TestRun_ForgetsGoneCollector: when a collector leaves Consul's healthy
// instances, the Source forgets its flagged count and its checkpoints, and
// keeps those of the collectors still there.
func TestRun_ForgetsGoneCollector(t *testing.T) {
	consul := newFakeConsul(t, "a", "b")
	s := New(Config{Consul: consul.client(t), Wait: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, c := range []string{"a", "b"} {
		s.add(c, []structs.Sample{
			{JobID: "j", Step: 10, Time: 1, CheckpointStep: 10},
			{JobID: "j", Step: -1, Time: 2}, // invalid: flagged
		})
	}
	must.Eq(t, map[string]int{"a": 1, "b": 1}, s.Flagged())
	// Run found both and waits for a change.
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(consul.waited),
		wait.Timeout(10*time.Second), wait.Gap(10*time.Millisecond)))

	consul.set("b")
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return len(s.Flagged()) == 1 }),
		wait.Timeout(10*time.Second), wait.Gap(10*time.Millisecond)))
	must.Eq(t, map[string]int{"b": 1}, s.Flagged())
	s.mu.Lock()
	defer s.mu.Unlock()
	must.MapLen(t, 1, s.checkpoints)
	must.MapContainsKey(t, s.checkpoints, checkpointKey{collector: "b", job: structs.NewJobKey("", "j")})
}

func steps(smps []structs.Sample) []int64 {
	out := make([]int64, len(smps))
	for i, smp := range smps {
		out[i] = smp.Step
	}
	return out
}

// fakeConsul answers the health endpoint's blocking queries for the
// collector service with the instances set last; their addresses accept
// no connection, so their scrapers back off.
type fakeConsul struct {
	srv     *httptest.Server
	mu      sync.Mutex
	index   uint64
	ids     []string
	changed chan struct{}
	// blocked counts the queries that waited for a change.
	blocked int
}

func newFakeConsul(t *testing.T, ids ...string) *fakeConsul {
	f := &fakeConsul{index: 1, ids: ids, changed: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeConsul) client(t *testing.T) *consulapi.Client {
	c, err := consulapi.NewClient(&consulapi.Config{Address: f.srv.URL})
	must.NoError(t, err)
	return c
}

// waited says whether a query waited for a change: its client had the
// instances set last.
func (f *fakeConsul) waited() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked > 0
}

// set replaces the healthy instances and wakes the blocking queries.
func (f *fakeConsul) set(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids, f.index = ids, f.index+1
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeConsul) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/health/service/"+DefaultService {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	changed := f.changed
	stale := r.URL.Query().Get("index") == strconv.FormatUint(f.index, 10)
	if stale {
		f.blocked++
	}
	f.mu.Unlock()
	if stale {
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-time.After(time.Second):
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var entries []*consulapi.ServiceEntry
	for _, id := range f.ids {
		entries = append(entries, &consulapi.ServiceEntry{
			Node:    &consulapi.Node{Address: "127.0.0.1"},
			Service: &consulapi.AgentService{ID: id, Service: DefaultService, Port: 1},
		})
	}
	w.Header().Set("X-Consul-Index", strconv.FormatUint(f.index, 10))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(entries)
}
