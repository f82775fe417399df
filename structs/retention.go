package structs

// Retention bounds what the replicated state keeps of the histories that
// grow while jobs run. The leader commits its agent's values (server
// block: max_job_samples, max_job_placements, max_events); every server
// applies the same, so that their states stay identical.
type Retention struct {
	// MaxJobSamples is how many samples are kept per job; beyond it the
	// older half of the history is thinned to every other sample.
	MaxJobSamples int
	// MaxJobPlacements is how many entries of each job's placement
	// history are kept; the oldest are dropped.
	MaxJobPlacements int
	// MaxEvents is how many events the cluster keeps; the oldest are
	// dropped.
	MaxEvents int
	// ModifyIndex is the Raft index the bounds were committed at; 0 for
	// the defaults, which hold until a leader commits bounds.
	ModifyIndex uint64
}

// Defaults of Retention, which hold until a leader commits others. They
// were the store's fixed bounds before the bounds could be configured.
const (
	DefaultMaxJobSamples    = 1024
	DefaultMaxJobPlacements = 64
	DefaultMaxEvents        = 4096
)

// DefaultRetention returns the bounds a state without committed ones
// keeps.
func DefaultRetention() *Retention {
	return &Retention{MaxJobSamples: DefaultMaxJobSamples, MaxJobPlacements: DefaultMaxJobPlacements, MaxEvents: DefaultMaxEvents}
}

// MinJobSamples is the least MaxJobSamples the store takes: thinning a
// history of fewer samples would not shorten it.
const MinJobSamples = 4

// Valid reports whether the bounds keep something: MaxJobSamples at least
// MinJobSamples, the others at least 1. The store refuses others; the
// agent's configuration bounds them more tightly (server/config).
func (r *Retention) Valid() bool {
	return r != nil && r.MaxJobSamples >= MinJobSamples && r.MaxJobPlacements >= 1 && r.MaxEvents >= 1
}

// Same reports whether r and o bound alike, whatever their indexes.
func (r *Retention) Same(o *Retention) bool {
	return r != nil && o != nil && r.MaxJobSamples == o.MaxJobSamples &&
		r.MaxJobPlacements == o.MaxJobPlacements && r.MaxEvents == o.MaxEvents
}
