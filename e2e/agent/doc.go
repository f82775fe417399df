// Package agent starts real Nomad and Consul agents for tests, on loopback
// ports from an allocator, and stops them when the test ends, whether it
// passed or not. It finds the binaries on the PATH (`make e2e` puts
// .tools/bin there) or through CARAVAN_NOMAD_BIN and CARAVAN_CONSUL_BIN; a
// missing binary fails the test, it never skips it.
package agent
