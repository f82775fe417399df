//go:build race

package main

// raceEnabled builds the trainer processes of the tests with the race
// detector when the tests run with it.
const raceEnabled = true
