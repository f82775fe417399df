package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is the path the UI is served under.
const Prefix = "/ui/"

//go:embed dist
var dist embed.FS

// Assets returns the built UI: index.html and assets/.
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// dist is embedded at build time; a missing directory fails the
		// build, not this call.
		panic(err)
	}
	return sub
}

// Handler serves the UI under Prefix. A path that names a file of the
// build answers the file (assets have content hashes in their names and
// are cached for a year); any other path answers index.html, which routes
// in the browser, so that /ui/jobs/demo can be bookmarked and reloaded.
// It serves only GET and HEAD, reads nothing but the embedded files, and
// needs no token: the pages read the API with the user's token.
func Handler() http.Handler {
	assets := Assets()
	files := http.FileServerFS(assets)
	return http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the UI is read with GET", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(assets, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				files.ServeHTTP(w, r)
				return
			}
		}
		serveIndex(w, r, assets)
	}))
}

// serveIndex answers index.html, never cached, so that a new build's
// asset names are picked up at once.
func serveIndex(w http.ResponseWriter, r *http.Request, assets fs.FS) {
	b, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		http.Error(w, "the UI was not built into this binary: run make ui", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}
