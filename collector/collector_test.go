package collector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/client"
	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func sample(step int64) structs.Sample {
	return structs.Sample{JobID: "j1", Role: structs.RoleWorker, Step: step, Loss: 1 / float64(step+1), NumPS: 1, NumWorkers: 2}
}

// post sends body to the collector's POST /v1/report and returns the
// status and the body of the answer.
func post(t *testing.T, c *Collector, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+c.Addr()+"/v1/report", "application/json", bytes.NewReader(body))
	must.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(out)
}

func reportBody(t *testing.T, samples ...structs.Sample) []byte {
	t.Helper()
	body, err := json.Marshal(structs.ReportRequest{Samples: samples})
	must.NoError(t, err)
	return body
}

// get reads GET /v1/samples with query.
func get(t *testing.T, c *Collector, query string) *Page {
	t.Helper()
	resp, err := http.Get("http://" + c.Addr() + "/v1/samples?" + query)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	var p Page
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	return &p
}

func steps(p *Page) []int64 {
	out := []int64{}
	for _, s := range p.Samples {
		out = append(out, s.Step)
	}
	return out
}

func TestReport_GoodBatch(t *testing.T) {
	c := TestCollector(t, Config{})

	// The trainers' Go client reports unchanged.
	cl, err := client.New(client.Config{Addrs: []string{c.Addr()}, FlushInterval: time.Hour})
	must.NoError(t, err)
	defer cl.Close(context.Background())
	for s := range int64(3) {
		cl.Report(sample(s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must.NoError(t, cl.Flush(ctx))

	// A raw report answers as the Caravan server does.
	untimed := sample(3)
	untimed.Namespace, untimed.Time = "", 0
	before := time.Now().UnixNano()
	code, body := post(t, c, reportBody(t, untimed, sample(4)))
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	var resp structs.ReportResponse
	must.NoError(t, json.Unmarshal([]byte(body), &resp))
	must.Eq(t, structs.ReportResponse{Accepted: 2, Index: 5}, resp)

	p := get(t, c, "since=0")
	must.Eq(t, []int64{0, 1, 2, 3, 4}, steps(p))
	must.Eq(t, 5, p.Next)
	must.Eq(t, 0, p.Dropped)
	must.False(t, p.Truncated)
	must.False(t, p.More)
	must.Eq(t, c.Instance(), p.Instance)
	got := p.Samples[3]
	must.Eq(t, structs.DefaultNamespace, got.Namespace, must.Sprint("the namespace is defaulted"))
	must.GreaterEq(t, before, got.Time, must.Sprint("an untimed sample is stamped on arrival"))
	want := sample(3)
	want.Namespace, want.Time = got.Namespace, got.Time
	must.Eq(t, want, got)

	p = get(t, c, "since=3")
	must.Eq(t, []int64{3, 4}, steps(p), must.Sprint("since=N returns the samples numbered after N"))
	p = get(t, c, "since=1&limit=2")
	must.Eq(t, []int64{1, 2}, steps(p))
	must.Eq(t, 3, p.Next)
	must.True(t, p.More)

	st := c.Stats()
	must.Eq(t, Stats{Status: "ok", Instance: c.Instance(), Held: 5, Last: 5, Received: 5}, st)
}

func TestReport_Malformed(t *testing.T) {
	c := TestCollector(t, Config{})
	negative := sample(2)
	negative.Loss = -1
	aheadCkpt := sample(3)
	aheadCkpt.CheckpointStep = 9
	longID := sample(4)
	longID.JobID = strings.Repeat("x", MaxIDLength+1)
	future := sample(6)
	// 2h1s ahead: a little less by the time it arrives, "2h0m…" still.
	future.Time = time.Now().Add(2*time.Hour + time.Second).UnixNano()
	skewed := sample(7)
	skewed.Time = time.Now().Add(30 * time.Second).UnixNano()
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"not JSON", `{"samples": [`, []string{"request body is not a JSON report"}},
		{"unknown field", `{"samples": [{"job_id": "j1", "step": 1, "lost": 2}]}`, []string{`unknown field "lost"`}},
		{"trailing data", `{"samples": [{"job_id": "j1"}]} {}`, []string{"data after its JSON value"}},
		{"a stray brace", `{"samples": [{"job_id": "j1"}]}}`, []string{"data after its JSON value"}},
		{"a stray bracket", `{"samples": [{"job_id": "j1"}]}]`, []string{"data after its JSON value"}},
		{"no samples", `{"samples": []}`, []string{"invalid report: it has no samples"}},
		{"a sample, not a report", `{"job_id": "j1", "step": 1}`, []string{`unknown field "job_id"`}},
		{"one invalid sample spoils the batch",
			string(reportBody(t, sample(1), negative, sample(5), aheadCkpt, structs.Sample{Step: 1}, longID, skewed, future)),
			[]string{
				"5 of 8 samples are invalid, none was kept",
				"samples[1]: Loss: -1 must be a finite number, not negative",
				"samples[3]: CheckpointStep: 9 is ahead of step 3",
				"samples[4]: JobID: is required",
				fmt.Sprintf("samples[5]: JobID: is %d bytes long; the limit is %d", MaxIDLength+1, MaxIDLength),
				"samples[7]: Time: is 2h0m",
				"ahead of the receiver's clock; at most 1m0s is allowed",
			}},
		{"a sample from the future", string(reportBody(t, future)), []string{"1 of 1 samples are invalid", "samples[0]: Time: is 2h0m"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, c, []byte(tc.body))
			must.Eq(t, http.StatusBadRequest, code, must.Sprint(body))
			for _, w := range tc.want {
				must.StrContains(t, body, w)
			}
			st := c.Stats()
			must.Eq(t, 0, st.Held, must.Sprint("nothing of a malformed report is kept"))
			must.Eq(t, uint64(i+1), st.Rejected)
		})
	}
	// The Go client surfaces the rejection.
	cl, err := client.New(client.Config{Addrs: []string{c.Addr()}, FlushInterval: time.Hour})
	must.NoError(t, err)
	defer cl.Close(context.Background())
	cl.Report(sample(1))
	cl.Report(structs.Sample{JobID: "j1", Step: 1, Role: "chief"})
	must.Eq(t, 1, cl.Dropped(), must.Sprint("the client checks too"))
}

func TestReport_TooLarge(t *testing.T) {
	c := TestCollector(t, Config{})
	var samples []structs.Sample
	for s := range int64(12000) {
		samples = append(samples, sample(s))
	}
	body := reportBody(t, samples...)
	must.Greater(t, MaxBodyBytes, len(body))

	code, msg := post(t, c, body)
	must.Eq(t, http.StatusRequestEntityTooLarge, code, must.Sprint(msg))
	must.StrContains(t, msg, "larger than 1048576 bytes")

	// Without a Content-Length the limit is enforced while reading.
	req, err := http.NewRequest(http.MethodPost, "http://"+c.Addr()+"/v1/report", io.MultiReader(bytes.NewReader(body)))
	must.NoError(t, err)
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	st := c.Stats()
	must.Eq(t, 0, st.Held)
	must.Eq(t, 2, st.Rejected)
}

func TestSamples_Blocking(t *testing.T) {
	c := TestCollector(t, Config{})
	code, _ := post(t, c, reportBody(t, sample(1)))
	must.Eq(t, http.StatusOK, code)

	// The reads that must not wait wait an hour: that they answer at all
	// shows it, whatever the machine's load.
	t.Run("wakes on a new report", func(t *testing.T) {
		got := make(chan *Page, 1)
		go func() {
			resp, err := http.Get("http://" + c.Addr() + "/v1/samples?since=1&wait=1h")
			if err != nil {
				t.Errorf("get: %v", err)
				close(got)
				return
			}
			defer resp.Body.Close()
			var p Page
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
				t.Errorf("decode: %v", err)
			}
			got <- &p
		}()
		// The read is blocked when the report comes, however long it took
		// to get there.
		agent.WaitFor(t, time.Minute, "the read waiting", func() error {
			select {
			case p := <-got:
				t.Fatalf("the read returned before any new sample: %+v", p)
			default:
			}
			if n := c.Stats().Waiting; n != 1 {
				return fmt.Errorf("%d reads waiting", n)
			}
			return nil
		})
		code, _ := post(t, c, reportBody(t, sample(2), sample(3)))
		must.Eq(t, http.StatusOK, code)
		select {
		case p := <-got:
			must.NotNil(t, p)
			must.Eq(t, []int64{2, 3}, steps(p))
			must.Eq(t, 3, p.Next)
		case <-time.After(time.Minute):
			t.Fatal("the read did not wake on the report")
		}
	})
	t.Run("times out empty", func(t *testing.T) {
		start := time.Now()
		p := get(t, c, "since=3&wait=300ms")
		must.GreaterEq(t, 300*time.Millisecond, time.Since(start))
		must.Eq(t, []int64{}, steps(p))
		must.Eq(t, 3, p.Next, must.Sprint("next stays at since"))
		must.False(t, p.Truncated)
	})
	t.Run("wait is bounded", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		p := c.Samples(ctx, 3, DefaultLimit, time.Hour)
		must.SliceEmpty(t, p.Samples, must.Sprint("the context ends the wait"))
	})
	t.Run("since ahead of the collector", func(t *testing.T) {
		p := get(t, c, "since=99&wait=1h") // a reset answers at once
		must.True(t, p.Reset)
		must.Eq(t, []int64{1, 2, 3}, steps(p))
		must.Eq(t, 3, p.Next)
	})
	t.Run("bad parameters", func(t *testing.T) {
		for _, q := range []string{"since=-1", "since=x", "wait=soon", "wait=-1s", "limit=0"} {
			resp, err := http.Get("http://" + c.Addr() + "/v1/samples?" + q)
			must.NoError(t, err)
			resp.Body.Close()
			must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint(q))
		}
	})
}

// TestShutdown_EndsBlockingReads checks that a read waiting for samples
// does not hold up a graceful shutdown.
func TestShutdown_EndsBlockingReads(t *testing.T) {
	c := TestCollector(t, Config{})
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + c.Addr() + "/v1/samples?wait=1h")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	agent.WaitFor(t, 10*time.Second, "the read waiting", func() error {
		if c.Stats().Waiting != 1 {
			return fmt.Errorf("%d reads waiting", c.Stats().Waiting)
		}
		return nil
	})
	// The read waits an hour: a Shutdown that waited for it would end
	// with its context's error.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must.NoError(t, c.Shutdown(ctx))
	must.NoError(t, <-done)
	must.NoError(t, c.Shutdown(ctx), must.Sprint("Shutdown is idempotent"))
	must.Error(t, c.Start())
}

// TestWindow_Flood reports 50,000 samples to a window of 1,000: the
// collector holds at most the window, the newest, and counts the rest as
// dropped.
func TestWindow_Flood(t *testing.T) {
	const window, total, batch, senders = 1000, 50000, 500, 4
	c := TestCollector(t, Config{Window: window})
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for first := int64(g * batch); first < total; first += senders * batch {
				var samples []structs.Sample
				for s := first; s < first+batch; s++ {
					samples = append(samples, sample(s))
				}
				body, _ := json.Marshal(structs.ReportRequest{Samples: samples})
				resp, err := http.Post("http://"+c.Addr()+"/v1/report", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("post: %v", err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("post: %s", resp.Status)
				}
			}
		})
	}
	wg.Wait()
	// One batch larger than the window keeps its newest samples.
	var big []structs.Sample
	for s := range int64(window + 10) {
		big = append(big, sample(total+s))
	}
	last, err := c.Report(big)
	must.NoError(t, err)
	must.Eq(t, uint64(total+window+10), last)

	st := c.Stats()
	must.Eq(t, window, st.Held)
	must.Eq(t, uint64(total+window+10), st.Received)
	must.Eq(t, uint64(total+10), st.Dropped)
	must.Eq(t, window, cap(c.win.buf), must.Sprint("memory is bounded by the window"))

	p := get(t, c, fmt.Sprintf("since=0&limit=%d", 2*window))
	must.True(t, p.Truncated)
	must.SliceLen(t, window, p.Samples)
	must.Eq(t, total+10, p.Samples[0].Step, must.Sprint("the oldest are dropped"))
	must.Eq(t, total+window+9, p.Samples[window-1].Step)
	must.Eq(t, st.Last, p.Next)
	must.Eq(t, uint64(total+10), p.Dropped)
	must.False(t, p.More)

	// A reader that kept up reads on without a gap.
	p = get(t, c, fmt.Sprintf("since=%d", st.Last-2))
	must.False(t, p.Truncated)
	must.SliceLen(t, 2, p.Samples)
}

func TestHealthAndMetrics(t *testing.T) {
	c := TestCollector(t, Config{})
	code, _ := post(t, c, reportBody(t, sample(1)))
	must.Eq(t, http.StatusOK, code)

	resp, err := http.Get("http://" + c.Addr() + "/v1/health")
	must.NoError(t, err)
	var st Stats
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.Eq(t, "ok", st.Status)
	must.Eq(t, 1, st.Held)

	resp, err = http.Get("http://" + c.Addr() + "/v1/metrics")
	must.NoError(t, err)
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.StrContains(t, string(text), "caravan_collector_samples_received_total 1")
	must.StrContains(t, string(text), "caravan_collector_samples_held 1")

	resp, err = http.Get("http://" + c.Addr() + "/v1/nope")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusNotFound, resp.StatusCode)
}

// TestCoordinatorMetrics: with a coordinator, /v1/metrics has its
// counters by resource, and /v1/coord/ is served beside the metrics API;
// without one, neither.
func TestCoordinatorMetrics(t *testing.T) {
	co, err := coord.New(coord.Config{})
	must.NoError(t, err)
	c := TestCollector(t, Config{Coordinator: co})
	resp, err := http.Post("http://"+c.Addr()+coord.AcquirePath+"?resource=cpu", "", nil)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Get("http://" + c.Addr() + "/v1/metrics")
	must.NoError(t, err)
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`caravan_coord_granted_total{resource="cpu"} 1`, `caravan_coord_holders{resource="cpu"} 1`,
		`caravan_coord_granted_total{resource="net"} 0`, `caravan_coord_expired_total{resource="cpu"} 0`,
	} {
		must.StrContains(t, string(text), want)
	}

	plain := TestCollector(t, Config{})
	resp, err = http.Post("http://"+plain.Addr()+coord.AcquirePath+"?resource=cpu", "", nil)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusNotFound, resp.StatusCode)
}

func TestConfigValidate(t *testing.T) {
	_, err := New(Config{Addr: "nowhere", Window: -1, Registration: Registration{AdvertiseAddr: "x", CheckInterval: -time.Second}})
	must.ErrorContains(t, err, `addr "nowhere"`)
	must.ErrorContains(t, err, "window -1 must be positive")
	must.ErrorContains(t, err, `advertise addr "x"`)
	must.ErrorContains(t, err, "check interval -1s must not be negative")
}
