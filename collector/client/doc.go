// Package client is the Go client that training tasks use to report their
// progress to Caravan (DESIGN.md §3). A trainer calls Report with one
// structs.Sample per step; the Client buffers samples and a background
// goroutine sends them, in batches, as the JSON body
// {"samples": [<structs.Sample>...]} of POST <addr>/v1/report.
//
// Delivery follows the status code of the answer:
//
//   - 2xx: the batch is committed and leaves the buffer.
//   - 4xx (except 408 and 429): the batch is malformed; it is logged and
//     dropped, never retried, and counted in Dropped.
//   - 5xx, 408, 429 and connection errors: the batch stays buffered and is
//     sent again later, to the next address of the list first: the
//     addresses are equivalent servers, any of which may be down.
//
// The buffer is bounded: when it is full, Report drops the oldest sample.
// Samples are delivered in the order they were reported, each at least once
// (a batch whose answer was lost is sent again).
//
// Flush sends everything reported so far and waits until it is committed;
// a trainer calls it right after writing a checkpoint, so that the sample
// announcing the checkpoint reaches Caravan at once rather than at the next
// tick. A Client is safe for concurrent use.
package client
