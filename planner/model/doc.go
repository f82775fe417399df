// Package model holds the online performance models Caravan's planner uses,
// after Optimus (Peng et al., EuroSys'18, §3): a job's loss curve, which
// predicts how many more steps it needs to converge, and its training speed
// as a function of its parameter servers and workers. Both are fitted with
// non-negative least squares (NNLS) from the samples trainers report.
//
// Fits allocate and take microseconds to milliseconds; evaluating a fitted
// model (Loss.At, Speed.At) is allocation-free and cheap enough for the
// planner's inner loop. Fitted models are plain values: safe to copy and to
// share between goroutines.
package model
