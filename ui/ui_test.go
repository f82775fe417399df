package ui_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/ui"
	"github.com/shoenig/test/must"
)

func TestHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET "+ui.Prefix, ui.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	// The build's script, named by index.html.
	scripts, err := fs.Glob(ui.Assets(), "assets/*.js")
	must.NoError(t, err)
	must.Len(t, 1, scripts)

	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		must.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		must.NoError(t, err)
		return res, string(b)
	}
	cases := []struct {
		path, contains, cache string
	}{
		{"/ui/", `<div id="app">`, "no-cache"},
		// Addresses the page routes itself answer index.html.
		{"/ui/jobs/demo", `<div id="app">`, "no-cache"},
		{"/ui/cluster", "/ui/" + scripts[0], "no-cache"},
		{"/ui/" + scripts[0], "caravan.token", "public, max-age=31536000, immutable"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			res, body := get(c.path)
			must.EqOp(t, http.StatusOK, res.StatusCode)
			must.True(t, strings.Contains(body, c.contains), must.Sprintf("the answer lacks %q", c.contains))
			must.EqOp(t, c.cache, res.Header.Get("Cache-Control"))
			must.EqOp(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
		})
	}
	res, body := get("/ui/")
	must.StrContains(t, res.Header.Get("Content-Type"), "text/html")
	must.True(t, strings.HasPrefix(body, "<!doctype html>"))
}
