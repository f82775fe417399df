// Package ui embeds Caravan's web UI and serves it. The UI is a small
// Preact application with uPlot charts (sources in this directory: src/,
// package.json, vite.config.ts), built by Vite into dist/, which is
// committed: `go build` needs no Node.js, and `make ui` rebuilds dist/
// from the sources with the versions package-lock.json pins (`make lint`
// checks that the committed dist/ is what the sources build).
//
// Every agent serves it at /ui/ (server/http_endpoints.go registers Handler); it
// reads only the public HTTP API, with the ACL token the user gives it.
// See README.md for the pages and the browser tests.
package ui
