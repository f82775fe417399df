# An HA cluster of Caravan servers, run by Nomad itself.
#
#   nomad job run deploy/nomad/caravan-servers.nomad.hcl
#   nomad job run -var count=5 -var 'datacenters=["dc1"]' deploy/nomad/caravan-servers.nomad.hcl
#
# Three servers (or five) in one group, one per Nomad client. Each renders
# its agent configuration from the allocation: it binds to the client's
# address on the ports Nomad gives it, and finds the others through Consul:
# `retry_join = ["consul://caravan"]` means "the HTTP addresses of the
# passing instances of the Consul service caravan", which this job registers.
# See deploy/README.md.
#
# Needs on each client: the Caravan binary (caravan_binary, or an artifact),
# the exec or raw_exec driver, Consul, and the Nomad API reachable at
# nomad_addr. The Nomad ID of this job is "caravan", without a dash on
# purpose: the nomad driver names the Nomad jobs it submits "caravan-<job>",
# so an ID such as "caravan-servers" would be taken by a Caravan job named
# "servers".
#
# Where the state lives, and what survives what (deploy/README.md has more):
#
# - By default each server keeps its Raft state in its allocation directory.
#   A server that is replaced (job update, drain) leaves the Raft cluster on
#   SIGINT, and its replacement joins as a new server and receives the state
#   from the leader. Nothing is lost while a majority keeps running, but
#   losing the whole job (`nomad job stop`, or every server at once) loses
#   the state: keep snapshots (caravan-snapshot.nomad.hcl). A server that
#   died instead (its client lost) stays in the Raft configuration until
#   `caravan operator raft remove-peer` removes it.
# - data_volume puts the state on a host volume instead, which outlives the
#   allocations: the durable choice. It needs the exec driver (raw_exec cannot
#   mount volumes) and distinct hosts, and it relies on a server rejoining
#   the cluster with the state it had before leaving, which the agent does
#   not do yet (deploy/README.md, "Known problems"). Use static ports with it,
#   so that a server's Raft address stays the same.
# - sticky_data asks Nomad to carry the allocation directory over to the
#   replacement (ephemeral_disk sticky and migrate). Best effort only: the
#   data is lost with the client. It relies on the same rejoin, so it is off.

variable "datacenters" {
  type        = list(string)
  default     = ["*"]
  description = "Nomad datacenters the servers may run in."
}

variable "node_pool" {
  type        = string
  default     = "default"
  description = "Nomad node pool the servers run in."
}

variable "count" {
  type        = number
  default     = 3
  description = "Number of Caravan servers, and their bootstrap_expect: 3 or 5 (odd, so that a majority survives a network split)."
}

variable "distinct_hosts" {
  type        = bool
  default     = true
  description = "Run every server on a different Nomad client. Set false only on a test cluster smaller than count: servers sharing a client fail together."
}

variable "driver" {
  type        = string
  default     = "exec"
  description = "Task driver: exec (isolated; can mount data_volume) or raw_exec."

  validation {
    condition     = contains(["exec", "raw_exec"], var.driver)
    error_message = "The driver must be \"exec\" or \"raw_exec\"."
  }
}

variable "caravan_binary" {
  type        = string
  default     = "/usr/local/bin/caravan"
  description = "Absolute path of the caravan binary on every client; used when caravan_artifact is empty."
}

variable "caravan_artifact" {
  type        = string
  default     = ""
  description = "URL of a caravan binary to download instead, with its checksum: \"https://example.com/caravan?checksum=sha256:...\". Empty: use caravan_binary."
}

variable "release" {
  type        = string
  default     = ""
  description = "A label of the Caravan release caravan_binary holds, such as \"0.2.0\". Changing it replaces the servers one at a time: do so after installing a new binary at caravan_binary on every client."
}

variable "http_port" {
  type        = number
  default     = 0
  description = "Static port of the HTTP API (4680 is the agent's default); 0 lets Nomad pick one."
}

variable "raft_port" {
  type        = number
  default     = 0
  description = "Static port of Raft (4681 is the agent's default); 0 lets Nomad pick one. Use a static port with data_volume."
}

variable "data_volume" {
  type        = string
  default     = ""
  description = "Name of a Nomad host volume (client host_volume, writable) to keep the Raft state on; needs the exec driver. Empty: the allocation directory."
}

variable "sticky_data" {
  type        = bool
  default     = false
  description = "Carry the allocation directory over to a replacement allocation (ephemeral_disk sticky and migrate). See the header: off until the agent rejoins with old state."
}

variable "service_name" {
  type        = string
  default     = "caravan"
  description = "Consul service the servers register as and find each other through."
}

variable "retry_join" {
  type        = list(string)
  default     = []
  description = "server.retry_join of every server. Empty: [\"consul://<service_name>\"]."
}

variable "scheduler_algorithm" {
  type        = string
  default     = "optimus"
  description = "scheduler.algorithm: optimus, drf, tetris, fifo, or a plugin."
}

variable "scheduler_interval" {
  type        = string
  default     = "60s"
  description = "scheduler.interval: time between scheduling rounds."
}

variable "log_level" {
  type        = string
  default     = "INFO"
  description = "The agents' log level: TRACE, DEBUG, INFO, WARN or ERROR."
}

variable "nomad_addr" {
  type        = string
  default     = ""
  description = "URL of the Nomad API the nomad driver submits jobs to. Empty: the local Nomad agent, http://<client address>:4646."
}

variable "nomad_token" {
  type        = string
  default     = ""
  description = "Nomad ACL token of the nomad driver; empty for none. It ends up in the job and in local/agent.hcl: prefer a Nomad Variable or Vault template on a cluster with ACLs."
}

variable "nomad_region" {
  type        = string
  default     = ""
  description = "nomad.region; empty for the Nomad agent's own."
}

variable "nomad_namespace" {
  type        = string
  default     = ""
  description = "nomad.namespace: the Nomad namespace of every job Caravan submits; empty for each Caravan job's own."
}

variable "checkpoint_dir" {
  type        = string
  default     = "/var/lib/caravan/checkpoints"
  description = "nomad.checkpoint_dir: absolute path, on a file system every Nomad client shares, under which training jobs checkpoint."
}

variable "collector_command" {
  type        = string
  default     = ""
  description = "nomad.collector_command: the caravan binary on the Nomad clients that run training jobs. Set, every training group gets a caravan collector sidecar (raw_exec) registered in Consul at consul_addr, which the leader scrapes. Empty: trainers report to the servers."
}

variable "consul_addr" {
  type        = string
  default     = "127.0.0.1:8500"
  description = "Address of the Consul agent on each client, as the Caravan agent reaches it (exec and raw_exec tasks share the client's network); collector sidecars use it too."
}

variable "consul_token" {
  type        = string
  default     = ""
  description = "Consul ACL token of the Caravan agent; empty for none."
}

variable "job_drivers" {
  type        = list(string)
  default     = ["*"]
  description = "jobs.drivers: the Nomad task drivers Caravan jobs may use; \"*\" for any."
}

variable "job_denied_drivers" {
  type        = list(string)
  default     = ["raw_exec"]
  description = "jobs.denied_drivers: task drivers Caravan jobs may not use. Caravan submits jobs with nomad_token, so whoever may submit one runs what this allows; [] allows raw_exec, for clusters that trust every submitter."
}

variable "job_namespaces" {
  type        = list(string)
  default     = ["*"]
  description = "jobs.namespaces: the namespaces Caravan jobs may run in; \"*\" for any."
}

variable "cpu" {
  type        = number
  default     = 500
  description = "CPU of each server, in MHz."
}

variable "memory" {
  type        = number
  default     = 512
  description = "Memory of each server, in MiB."
}

locals {
  retry_join = length(var.retry_join) > 0 ? var.retry_join : ["consul://${var.service_name}"]
  nomad_addr = var.nomad_addr != "" ? var.nomad_addr : "http://{{ env \"attr.unique.network.ip-address\" }}:4646"

  # The volume is mounted here; the exec driver's chroot has no /var/lib
  # entry of its own to conflict with.
  volume_path = "/srv/caravan"
  data_dir    = var.data_volume != "" ? "${local.volume_path}/data" : "{{ env \"NOMAD_ALLOC_DIR\" }}/data"
}

job "caravan" {
  type        = "service"
  datacenters = var.datacenters
  node_pool   = var.node_pool

  # One server at a time, and only once the previous one counts as healthy:
  # its checks pass, which for the ready check below means it sees a leader.
  # A new version that never gets there is rolled back.
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "30s"
    healthy_deadline  = "5m"
    progress_deadline = "10m"
    auto_revert       = true
  }

  group "servers" {
    count = var.count

    dynamic "constraint" {
      for_each = var.distinct_hosts ? [true] : []
      content {
        operator = "distinct_hosts"
        value    = "true"
      }
    }

    # Draining a client moves its server the same way: one at a time.
    migrate {
      max_parallel     = 1
      health_check     = "checks"
      min_healthy_time = "30s"
      healthy_deadline = "5m"
    }

    network {
      port "http" {
        static = var.http_port
      }
      port "raft" {
        static = var.raft_port
      }
    }

    dynamic "volume" {
      for_each = var.data_volume != "" ? [var.data_volume] : []
      labels   = [volume.value]
      content {
        type   = "host"
        source = volume.value
      }
    }

    ephemeral_disk {
      size    = 300
      sticky  = var.sticky_data
      migrate = var.sticky_data
    }

    # Consul deregisters the server this long before it gets kill_signal, so
    # that the others stop finding it before it leaves.
    shutdown_delay = "5s"

    # Discovery: retry_join = ["consul://caravan"] lists the passing
    # instances of this service. The check is liveness only, on
    # /v1/agent/self: /v1/agent/health is 503 until there is a leader, and
    # there is no leader until the servers have found each other here, so a
    # leader-based check would keep every server out of the catalog for
    # good. No check_restart: restarting a server that lacks a leader (an
    # election in progress, or a lost majority) makes it leave the cluster
    # and helps nothing.
    service {
      name     = var.service_name
      port     = "http"
      provider = "consul"
      tags     = ["server", "http"]

      check {
        name     = "Caravan HTTP API"
        type     = "http"
        path     = "/v1/agent/self"
        interval = "5s"
        timeout  = "2s"
      }
    }

    # Readiness, for the update and migrate blocks only: /v1/agent/health is
    # 200 once this server sees a leader. A replacement that has not joined
    # the cluster never becomes healthy, so Nomad does not replace the next
    # server meanwhile, and rolls the deployment back. A separate service, so
    # that it does not hide servers from discovery (see above).
    service {
      name     = "${var.service_name}-ready"
      port     = "http"
      provider = "consul"
      tags     = ["server"]

      check {
        name     = "Caravan server has a leader"
        type     = "http"
        path     = "/v1/agent/health"
        interval = "5s"
        timeout  = "2s"
      }
    }

    restart {
      attempts = 5
      interval = "10m"
      delay    = "15s"
      mode     = "delay"
    }

    task "caravan" {
      driver = var.driver

      config {
        command = var.caravan_artifact != "" ? "local/caravan" : var.caravan_binary
        args    = ["agent", "-config", "local/agent.hcl"]
      }

      dynamic "artifact" {
        for_each = var.caravan_artifact != "" ? [var.caravan_artifact] : []
        content {
          source      = artifact.value
          destination = "local/caravan"
          mode        = "file"
        }
      }

      dynamic "volume_mount" {
        for_each = var.data_volume != "" ? [var.data_volume] : []
        content {
          volume      = volume_mount.value
          destination = local.volume_path
        }
      }

      # SIGINT: the server leaves the Raft configuration, so that the others
      # keep their quorum without it, then stops. Leaving takes up to ~20s
      # when the request is forwarded to the leader.
      # A new value makes a new version of the task, which Nomad rolls out
      # with the update block.
      meta {
        caravan_release = var.release
      }

      kill_signal  = "SIGINT"
      kill_timeout = "30s"

      template {
        destination = "local/agent.hcl"
        # A change of this file (a new job version) replaces the allocation
        # anyway; there is nothing to reload it for.
        change_mode = "noop"
        data        = <<-EOT
          name      = "caravan-{{ env "NOMAD_ALLOC_INDEX" }}"
          bind_addr = "{{ env "NOMAD_IP_http" }}"
          data_dir  = "${local.data_dir}"
          log_level = "${var.log_level}"
          driver    = "nomad"

          ports {
            http = {{ env "NOMAD_PORT_http" }}
            raft = {{ env "NOMAD_PORT_raft" }}
          }

          server {
            bootstrap_expect = ${var.count}
            retry_join       = ${jsonencode(local.retry_join)}
            retry_interval   = "10s"
          }

          scheduler {
            algorithm = "${var.scheduler_algorithm}"
            interval  = "${var.scheduler_interval}"
          }

          nomad {
            address           = "${local.nomad_addr}"
            token             = "${var.nomad_token}"
            region            = "${var.nomad_region}"
            namespace         = "${var.nomad_namespace}"
            checkpoint_dir    = "${var.checkpoint_dir}"
            collector_command = "${var.collector_command}"
          }

          jobs {
            drivers        = ${jsonencode(var.job_drivers)}
            denied_drivers = ${jsonencode(var.job_denied_drivers)}
            namespaces     = ${jsonencode(var.job_namespaces)}
          }

          consul {
            address = "${var.consul_addr}"
            token   = "${var.consul_token}"
            # Nomad registers this server (the job's service blocks).
            auto_advertise = false
          }
        EOT
      }

      resources {
        cpu    = var.cpu
        memory = var.memory
      }
    }
  }
}
