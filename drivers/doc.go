// Package drivers holds the backends that enact committed plans and report the
// cluster back: drivers/sim, the embedded simulated cluster that `caravan
// sim` runs on, and, next, drivers/nomad for real Nomad clusters through
// nomad/api. Drivers never import planner.
package drivers
