# The node-local subtask coordinator on every Nomad client (collector/coord).
#
#   nomad job run deploy/nomad/caravan-coordinator.nomad.hcl
#
# A system job: one `caravan collector -coordinator` per client, listening on
# the same loopback port on each (addr), with host networking. Co-located
# training jobs ask it before each computation and each pull or push, so
# that one job computes while another communicates (Harmony, dissertation
# §4.3.1). Give Caravan's agents the same address:
#
#   nomad {
#     coordinator_addr = "127.0.0.1:9190"
#   }
#
# and every task Caravan starts gets CARAVAN_COORDINATOR_ADDR. Trainers
# without it, or whose coordinator is down, run uncoordinated.
#
# The job ID is "caravan_coordinator", not "caravan-coordinator": the nomad
# driver names the Nomad jobs it submits "caravan-<job>".

variable "datacenters" {
  type        = list(string)
  default     = ["*"]
  description = "Nomad datacenters whose clients run a coordinator."
}

variable "node_pool" {
  type        = string
  default     = "default"
  description = "Nomad node pool whose clients run a coordinator: the ones training jobs run on."
}

variable "driver" {
  type        = string
  default     = "raw_exec"
  description = "Task driver: raw_exec, or exec (host networking either way, so that the loopback address is the node's)."
}

variable "caravan_binary" {
  type        = string
  default     = "/usr/local/bin/caravan"
  description = "Absolute path of the caravan binary on the clients."
}

variable "addr" {
  type        = string
  default     = "127.0.0.1:9190"
  description = "host:port the coordinator listens on, the same on every client; the agents' nomad.coordinator_addr."
}

job "caravan_coordinator" {
  type        = "system"
  datacenters = var.datacenters
  node_pool   = var.node_pool

  group "coordinator" {
    # A coordinator that dies is started again at once: meanwhile trainers
    # run uncoordinated, and try again every 5 s.
    restart {
      attempts = 10
      interval = "5m"
      delay    = "1s"
      mode     = "delay"
    }

    task "coordinator" {
      driver = var.driver

      config {
        command = var.caravan_binary
        args    = ["collector", "-coordinator", "-no-consul", "-addr", var.addr, "-log-level", "warn"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
