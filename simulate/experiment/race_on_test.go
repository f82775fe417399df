//go:build race

package experiment

// raceDetector says the tests run with the race detector.
const raceDetector = true
