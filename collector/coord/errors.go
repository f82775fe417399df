package coord

import "errors"

// ErrInvalidRequest is wrapped by the error of Acquire when the request
// names no known resource or has a holder or TTL out of bounds. The HTTP
// API answers it with 400 Bad Request.
var ErrInvalidRequest = errors.New("invalid request")

// ErrQueueFull is wrapped by the error of Acquire when Config.MaxQueue
// subtasks already wait for the resource. The HTTP API answers it with 429
// Too Many Requests; a client runs the subtask uncoordinated.
var ErrQueueFull = errors.New("queue is full")

// ErrUnknownLease is wrapped by the error of Release when the lease
// expired, was released already, or never existed. The HTTP API answers
// it with 404 Not Found.
var ErrUnknownLease = errors.New("unknown or expired lease")

// ErrClosed is returned by Acquire once the coordinator is closed. The
// HTTP API answers it with 503 Service Unavailable.
var ErrClosed = errors.New("coordinator is closed")
