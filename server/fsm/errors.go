package fsm

import "errors"

// ErrTooComplex is returned by Encode for a request that encodes but that
// the FSM's decoder would refuse (msgpack nesting beyond the decoder's
// maximum depth, say): committing it would make every server skip it. The
// HTTP API answers it with 400.
var ErrTooComplex = errors.New("request cannot be applied by the state machine")

// ErrSkipped is returned by Apply for an entry that could not be applied
// on any server: it did not decode, or its handler panicked.
var ErrSkipped = errors.New("log entry skipped")
