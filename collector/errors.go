package collector

import "errors"

// ErrInvalidReport is wrapped by the error of Collector.Report when a
// report has no samples or an invalid one; nothing of it was kept. The
// HTTP API answers it with 400 Bad Request.
var ErrInvalidReport = errors.New("invalid report")
