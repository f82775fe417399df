# One server of a three-server Caravan cluster on VMs, for
# /etc/caravan.d/server.hcl (deploy/systemd/caravan.service reads that
# directory). The three servers share this file but for name and bind_addr.
# Every key is in server/config/README.md.

name = "caravan-1"

# Raft log, snapshots and the server's ID (node-id). Keep it across restarts
# and upgrades: a server that loses it comes back as a new server. The
# systemd unit creates it (StateDirectory=caravan).
data_dir = "/var/lib/caravan"

# This VM's own address, not 0.0.0.0: the agent tells the other servers to
# reach it at bind_addr:ports.raft, and refuses to start when that is not an
# address they can use ("local bind address is not advertisable").
bind_addr = "10.0.0.11"

log_level = "INFO"
driver    = "nomad"

# The defaults; open both between the servers, and http to the CLI, to
# trainers reporting samples and to the Nomad clients' health checks.
ports {
  http = 4680
  raft = 4681
}

server {
  # The cluster elects its first leader once three servers know each other.
  bootstrap_expect = 3

  # The servers' HTTP addresses. Listing this server too is harmless: it
  # skips itself. A server with Raft state in data_dir ignores this list
  # when it restarts and rejoins through Raft alone.
  retry_join     = ["10.0.0.11:4680", "10.0.0.12:4680", "10.0.0.13:4680"]
  retry_interval = "15s"

  # What the state keeps (server/README.md, "Retention and garbage
  # collection"): a job that ended is purged, with its history, after
  # job_gc_threshold. The max_ bounds are replicated: the leader commits
  # its own, so set the same on every server.
  job_gc_threshold   = "4h"
  job_gc_interval    = "5m"
  max_job_samples    = 1024
  max_job_placements = 64
  max_events         = 4096
}

# The cluster's algorithm and options are replicated: a leader commits
# these when the cluster has none yet, and `caravan operator scheduler
# set-config` changes them. SIGHUP (systemctl reload) commits this block
# again whenever it sets algorithm or options, undoing set-config; leave
# them out to manage the algorithm with the CLI alone. interval is this
# server's own, used while it leads.
scheduler {
  algorithm = "optimus"
  interval  = "60s"
}

nomad {
  # The Nomad API. Every server must reach the same Nomad cluster: only the
  # leader submits jobs, and any server may become the leader.
  address = "http://127.0.0.1:4646"

  # Empty token, region and namespace fall back to NOMAD_TOKEN, NOMAD_REGION
  # and NOMAD_NAMESPACE in the agent's environment (an EnvironmentFile of the
  # systemd unit keeps the token out of this file).
  token     = ""
  region    = ""
  namespace = ""

  # A directory every Nomad client mounts at the same path (NFS, CephFS...):
  # the training tasks checkpoint there.
  checkpoint_dir = "/mnt/shared/caravan/checkpoints"

  # Left out, trainers report to this server, then to the others of
  # retry_join.
  # report_addrs = ["http://10.0.0.11:4680", "http://10.0.0.12:4680"]

  # With Consul on the Nomad clients, trainers can report to a
  # `caravan collector` sidecar in their own allocation instead, which the
  # leader finds in Consul (server-consul.hcl does this).
  # collector_command = "/usr/local/bin/caravan"
}

# What jobs may run. Every task runs with the Nomad token above, so whoever
# may submit a job to Caravan runs what this allows on the Nomad clients.
# The defaults, written out: any task driver but raw_exec (unisolated, as
# the Nomad client's user), in any namespace. Every server should say the
# same: the leader checks registrations, followers check them before
# forwarding.
jobs {
  drivers        = ["*"]
  denied_drivers = ["raw_exec"]
  namespaces     = ["*"]
}

# The local Consul agent. This server does not use it (auto_advertise and
# server_auto_join are false, retry_join names no consul:// service and
# there is no collector_command); server-consul.hcl does.
consul {
  address = "127.0.0.1:8500"
  token   = ""
}
