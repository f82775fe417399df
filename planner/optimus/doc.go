// Package optimus is the Optimus scheduling algorithm (Peng et al.,
// EuroSys'18, §4): resource allocation by marginal gain and placement by the
// scheme of its Theorem 1, with Caravan's fitted loss and speed models.
// Options.Gain selects the paper's marginal gain (the default) or
// GainRelative, a documented deviation registered as "optimus-relative".
// AssignParameters is the paper's parameter assignment algorithm (PAA,
// §5.3), which `caravan sim`'s optimus-paa workload runs for every job.
package optimus
