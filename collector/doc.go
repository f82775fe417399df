// Package collector is the metrics collector that training tasks report
// progress to (DESIGN.md §3): it buffers structs.Sample reports, serves them
// to Caravan servers, and registers itself in Consul as caravan-collector.
// collector/client is the Go client trainers call; collector/python holds
// the stdlib-only Python client.
//
//	trainer ──POST /v1/report──▶ Collector ◀──GET /v1/samples?since=N── Caravan server
//	trainer ──JSON lines file──▶  (window)       (blocking, like Nomad's queries)
//	                                 │
//	                                 └──register, HTTP check──▶ Consul (tags job=<id>, role=<role>)
//
// A Collector keeps the newest Config.Window samples in memory and numbers
// each kept sample with a sequence number from 1. A reader asks for the
// samples after the last number it saw and, with a wait, blocks until there
// is one; a reader that fell behind the window gets what is held, marked
// Truncated, and a reader from before a restart (its number is ahead of
// the collector's) gets everything held, marked Reset. Reports are
// checked whole before anything is kept, with the rules of
// structs.Sample.Validate, and a sample stamped more than
// structs.MaxSampleSkew ahead of the collector's clock is invalid: an
// invalid report is refused and nothing of it is kept. Nothing is persisted: the server that pulls samples commits
// them through Raft, and de-duplicates by (job, step).
//
// All methods of Collector are safe for concurrent use. See README.md for
// the HTTP API, the caravan collector command and the Consul registration.
package collector
