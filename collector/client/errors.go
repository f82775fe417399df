package client

import "errors"

// ErrRejected is wrapped by the error of Flush and Close when a collector
// answered a batch with a 4xx status: those samples were dropped.
var ErrRejected = errors.New("collector rejected samples")

// ErrClosed is returned by Flush once Close has returned; samples reported
// after Close are dropped.
var ErrClosed = errors.New("client is closed")

// ErrNoAddress is returned by New and ConfigFromEnv when no collector
// address is given.
var ErrNoAddress = errors.New("no collector address")
