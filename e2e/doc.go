// Package e2e holds Caravan's end-to-end tests: real Nomad and Consul agents
// (built by `make tools` from the modules pinned in tools/), started on
// loopback ports, with Caravan driving them. The tests carry the e2e build
// tag so that `go test ./...` stays fast; `make e2e` (part of `make test`)
// runs them with .tools/bin on the PATH. README.md describes the harness in
// e2e/agent, the fake GPU device plugin in e2e/fakegpu, and how to run them.
package e2e
