//go:build race

package server

// raceDetector says the tests run with the race detector.
const raceDetector = true
