package coord

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func serve(t *testing.T, cfg Config) (*Coordinator, string) {
	t.Helper()
	c := newCoord(t, cfg)
	mux := http.NewServeMux()
	c.Register(mux, nil)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func call(t *testing.T, method, url string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(out)
}

func TestHTTP_AcquireRelease(t *testing.T) {
	c, base := serve(t, Config{})
	code, body := call(t, "POST", base+AcquirePath+"?resource=cpu&holder=a/worker-0&ttl=5s", nil)
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	var g AcquireResponse
	must.NoError(t, json.Unmarshal([]byte(body), &g))
	must.True(t, g.Granted)
	must.Eq(t, RoleCPU, g.Role)
	must.Eq(t, 5.0, g.TTLS)

	// Held: a second request's wait passes, it leaves the queue. Not
	// granted means it answered before the holder's 5 s TTL freed the
	// resource, whatever the machine's load.
	start := time.Now()
	code, body = call(t, "POST", base+AcquirePath+"?resource=cpu&wait=50ms", nil)
	must.Eq(t, http.StatusOK, code)
	must.Eq(t, `{"Granted":false}`, strings.TrimSpace(body))
	must.GreaterEq(t, 50*time.Millisecond, time.Since(start), must.Sprint("the request waited its wait"))

	code, body = call(t, "GET", base+StatusPath, nil)
	must.Eq(t, http.StatusOK, code)
	var st Status
	must.NoError(t, json.Unmarshal([]byte(body), &st))
	must.Eq(t, 1, st.Resources[CPU].Holders)
	must.Eq(t, uint64(1), st.Resources[CPU].Abandoned)
	must.Eq(t, "a/worker-0", st.Holders[0].Holder)

	code, _ = call(t, "POST", base+ReleasePath+"?lease="+g.Lease, nil)
	must.Eq(t, http.StatusOK, code)
	code, body = call(t, "POST", base+ReleasePath+"?lease="+g.Lease, nil)
	must.Eq(t, http.StatusNotFound, code)
	must.StrContains(t, body, "unknown or expired lease")
	must.Eq(t, 0, c.Status().Resources[CPU].Holders)
}

// TestHTTP_Hostile: bad input is a clear 4xx, never a slot.
func TestHTTP_Hostile(t *testing.T) {
	c, base := serve(t, Config{MaxQueue: 1})
	for _, tc := range []struct {
		name, method, path string
		body               string
		code               int
		want               string
	}{
		{"no resource", "POST", AcquirePath, "", 400, `resource "" is not`},
		{"bad resource", "POST", AcquirePath + "?resource=gpu", "", 400, `resource "gpu" is not`},
		{"unknown parameter", "POST", AcquirePath + "?resource=cpu&lease=x", "", 400, `unknown parameter "lease"`},
		{"bad ttl", "POST", AcquirePath + "?resource=cpu&ttl=forever", "", 400, "ttl:"},
		{"negative wait", "POST", AcquirePath + "?resource=cpu&wait=-1s", "", 400, "wait:"},
		{"ttl too long", "POST", AcquirePath + "?resource=cpu&ttl=1h", "", 400, "ttl 1h0m0s must be"},
		{"long holder", "POST", AcquirePath + "?resource=cpu&holder=" + strings.Repeat("h", 300), "", 400, "holder is 300 bytes"},
		{"long query", "POST", AcquirePath + "?resource=cpu&holder=" + strings.Repeat("h", 2000), "", 400, "query is"},
		{"body", "POST", AcquirePath + "?resource=cpu", "{}", 400, "takes no body"},
		{"no lease", "POST", ReleasePath, "", 400, "lease is required"},
		{"unknown lease", "POST", ReleasePath + "?lease=nope", "", 404, "unknown or expired"},
		{"GET acquire", "GET", AcquirePath + "?resource=cpu", "", 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, tc.method, base+tc.path, strings.NewReader(tc.body))
			must.Eq(t, tc.code, code, must.Sprint(body))
			must.StrContains(t, body, tc.want)
		})
	}
	st := c.Status().Resources[CPU]
	must.Eq(t, uint64(0), st.Granted)

	// A full queue is 429 with Retry-After.
	call(t, "POST", base+AcquirePath+"?resource=net", nil)
	call(t, "POST", base+AcquirePath+"?resource=net", nil) // the secondary
	done := make(chan int, 1)
	go func() {
		code, _ := call(t, "POST", base+AcquirePath+"?resource=net&wait=10s", nil)
		done <- code
	}()
	waitQueued(t, c, Net, 1)
	resp, err := http.Post(base+AcquirePath+"?resource=net", "", nil)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusTooManyRequests, resp.StatusCode)
	must.Eq(t, "1", resp.Header.Get("Retry-After"))

	// The closed coordinator ends the waiter with 503.
	c.Close()
	must.Eq(t, http.StatusServiceUnavailable, <-done)
}

// TestHTTP_WaiterGone: a waiter whose connection closes leaves the queue,
// so a trainer killed while waiting takes nobody's turn.
func TestHTTP_WaiterGone(t *testing.T) {
	c, base := serve(t, Config{})
	call(t, "POST", base+AcquirePath+"?resource=cpu", nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", base+AcquirePath+"?resource=cpu&wait=30s", nil)
	must.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitQueued(t, c, CPU, 1)
	cancel()
	must.Error(t, <-errc)
	waitQueued(t, c, CPU, 0)
	must.Eq(t, uint64(1), c.Status().Resources[CPU].Abandoned)
}
