// Package drf is the dominant resource fairness baseline (Ghodsi et al.,
// NSDI'11), weighted and work-conserving, as the Optimus and Dorm papers
// compare against: jobs grow one worker at a time, always the job with the
// smallest weighted dominant share, until the cluster or the job's bounds
// stop it. A PS job gets a parameter server with each worker while it has
// fewer than its workers, within its PS bounds (a 1:1 ratio).
package drf
