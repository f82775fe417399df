// Package agent starts real Nomad and Consul agents for tests, on loopback
// ports from an allocator, and stops them when the test ends, whether it
// passed or not. It finds the binaries on the PATH (`make e2e` puts
// .tools/bin there) or through CARAVAN_NOMAD_BIN, CARAVAN_CONSUL_BIN and
// CARAVAN_FAKEGPU_BIN; a missing binary fails the test, it never skips it.
// BuildCaravan builds this checkout's caravan; PreviousCaravan returns
// the previous release's (tools/previous-release), which `make tools`
// builds into .tools/bin/caravan-previous, and fails when it is missing.
// StartNomad runs one dev agent; StartNomadCluster runs a server and
// several clients, some with fake GPUs (e2e/fakegpu).
package agent
