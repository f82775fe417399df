# One server of a three-server Caravan cluster on VMs that find each other
# through Consul instead of a list of addresses: server.hcl with the server
# and consul blocks below. Every VM runs a Consul agent; the three servers
# share this file but for name and bind_addr. Every key is in
# server/config/README.md.

name      = "caravan-1"
data_dir  = "/var/lib/caravan"
bind_addr = "10.0.0.11" # this VM's address, not 0.0.0.0 (see server.hcl)
log_level = "INFO"
driver    = "nomad"

ports {
  http = 4680
  raft = 4681
}

server {
  bootstrap_expect = 3

  # The HTTP addresses of the passing instances of the Consul service
  # "caravan", looked up again at every attempt. The same as
  # consul { server_auto_join = true }.
  retry_join     = ["consul://caravan"]
  retry_interval = "15s"
}

scheduler {
  algorithm = "optimus"
  interval  = "60s"
}

nomad {
  address        = "http://127.0.0.1:4646"
  checkpoint_dir = "/mnt/shared/caravan/checkpoints"

  # The caravan binary on the Nomad clients. Every group of a training job
  # then runs a `caravan collector` sidecar (raw_exec) that its tasks report
  # to; it registers in the Consul agent of the consul block below (which
  # must therefore be an address the clients reach too, such as their own
  # 127.0.0.1:8500), and the leader scrapes it from there. Leave it out to
  # have trainers report to the servers directly. Caravan adds the sidecar
  # itself: jobs.denied_drivers (raw_exec by default) does not refuse it.
  collector_command = "/usr/local/bin/caravan"
}

consul {
  # The Consul agent on this VM, and its ACL token if Consul has ACLs: it
  # needs service:write on "caravan" to register, and service:read and
  # node:read to look the others up.
  address = "127.0.0.1:8500"
  token   = ""

  # Register this server as service "caravan", with an HTTP check on
  # /v1/agent/self, so that the others find it; it deregisters when it
  # stops, and Consul removes it after a minute of failing checks.
  service_name   = "caravan"
  auto_advertise = true
}
