// Package chaos checks that a Caravan cluster keeps what it acknowledges
// and answers reads linearizably while its servers crash and its network
// splits: a cluster of real `caravan agent` processes, each in a network
// namespace of its own (Network), under concurrent clients (Checker),
// with leaders SIGKILLed and restarted and partitions made and healed.
// TestChaos runs a short schedule in `make test`; `make chaos` runs the
// long one, whose numbers are in server/README.md.
// TestChaos_RollingUpgrade upgrades such a cluster from the previous
// release (tools/previous-release) to this build, one server at a time
// (Schedule.Upgrade, Cluster.SetBinary).
package chaos
