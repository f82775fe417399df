// Package drivers holds the backends that enact committed plans and report the
// cluster back: drivers/nomad for real Nomad clusters through nomad/api, and
// drivers/sim for the embedded simulated cluster that `caravan agent -dev`
// and `caravan sim` run on. Drivers never import planner.
package drivers
