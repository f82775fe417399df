# What `caravan agent -dev` amounts to, for reference: the defaults -dev
# changes, written out. Dev mode itself cannot be written in a file: only
# -dev lets data_dir stay empty, which keeps the state in memory, and
# requires bootstrap_expect = 1. So this file is loaded with -dev:
#
#   caravan agent -dev -config deploy/config/dev.hcl
#
# Without -dev, set data_dir, and the same keys run a single persistent
# server on the simulated cluster.

bind_addr = "127.0.0.1" # default 0.0.0.0
driver    = "sim"       # default "nomad"

# data_dir = "/tmp/caravan-dev"  # in memory when empty; required without -dev

ports {
  http = 4680
  raft = 4681 # not opened while the state is in memory
}

server {
  bootstrap_expect = 1 # a dev agent is a cluster of one
}

# The simulated cluster runs no task, and examples/demo.hcl uses raw_exec:
# -dev denies no task driver (the default denies raw_exec).
jobs {
  denied_drivers = []
}

# The embedded simulated cluster: 4 nodes of 4 GPUs. -dev-speed N sets
# speed, and the scheduler's interval is counted in the simulated time.
sim {
  cluster = "4x4"
  speed   = 1
  seed    = 1
}
