// Package loader is the server's plugin host: it resolves an algorithm name
// to a planner.Algorithm, either a built-in, run in-process, or an external
// go-plugin binary declared in the agent configuration, which it launches
// with a SecureConfig checksum and AutoMTLS, over gRPC only, with its logs
// routed to the agent's as plugin.<name>.
//
// An external plugin that crashes or overruns its Plan deadline is killed
// and started again on the next use after a backoff (1 s doubling to 1
// min); its Plan returns an error meanwhile, and the caller plans with
// another algorithm. A built-in that panics is treated alike: the panic is
// recovered where the loader calls into it, logged with its stack, and
// returned as an error naming the algorithm and the panic value; its next
// Plan runs on a fresh instance. A Loader is safe for concurrent use.
package loader
