// Package collector is the metrics collector that training tasks report
// progress to (DESIGN.md §3): it buffers structs.Sample reports, serves them
// to Caravan servers, and registers itself in Consul as caravan-collector.
// collector/client is the Go client trainers call.
package collector
