# Daily backups of the Caravan cluster's state, run by Nomad.
#
#   nomad job run deploy/nomad/caravan-snapshot.nomad.hcl
#   nomad job periodic force caravan_snapshot     # take one now
#
# Every day at 03:00 UTC (schedule) it runs
# `caravan operator snapshot save` against one of the servers and writes
# caravan-<UTC time>.snap into the Nomad host volume snapshot_volume, then
# deletes the snapshots there older than keep_days. The file is written
# whole or not at all. Restore one with
# `caravan operator snapshot restore <file>` (deploy/README.md).
#
# The client that runs it needs the host volume, declared in its
# configuration:
#
#   client {
#     host_volume "caravan-snapshots" {
#       path      = "/var/lib/caravan-snapshots"
#       read_only = false
#     }
#   }
#
# A host volume is one client's disk: copy the files somewhere else too
# (another task, or a backup agent on that client), or use a CSI volume.
#
# The job ID is "caravan_snapshot", not "caravan-snapshot": the nomad driver
# names the Nomad jobs it submits "caravan-<job>".

variable "datacenters" {
  type        = list(string)
  default     = ["*"]
  description = "Nomad datacenters the backup may run in."
}

variable "node_pool" {
  type        = string
  default     = "default"
  description = "Nomad node pool the backup runs in."
}

variable "schedule" {
  type        = string
  default     = "0 3 * * *"
  description = "When to take a snapshot, a cron expression in time_zone."
}

variable "time_zone" {
  type        = string
  default     = "UTC"
  description = "Time zone of schedule."
}

variable "keep_days" {
  type        = number
  default     = 14
  description = "Snapshots older than this many days are deleted after a successful one."
}

variable "driver" {
  type        = string
  default     = "exec"
  description = "Task driver. exec, because the snapshot goes to a host volume and raw_exec cannot mount volumes."

  validation {
    condition     = var.driver == "exec"
    error_message = "The driver must be \"exec\": raw_exec cannot mount the host volume."
  }
}

variable "caravan_binary" {
  type        = string
  default     = "/usr/local/bin/caravan"
  description = "Absolute path of the caravan binary on the client; used when caravan_artifact is empty."
}

variable "caravan_artifact" {
  type        = string
  default     = ""
  description = "URL of a caravan binary to download instead, with its checksum. Empty: use caravan_binary."
}

variable "snapshot_volume" {
  type        = string
  default     = "caravan-snapshots"
  description = "Name of the Nomad host volume (writable) the snapshots go to."
}

variable "caravan_addr" {
  type        = string
  default     = ""
  description = "HTTP address of a Caravan server, \"http://10.0.0.11:4680\". Empty: a passing instance of the Consul service service_name."
}

variable "service_name" {
  type        = string
  default     = "caravan"
  description = "Consul service of the Caravan servers; used when caravan_addr is empty."
}

locals {
  snapshot_dir = "/snapshots"
  caravan      = var.caravan_artifact != "" ? "local/caravan" : var.caravan_binary
  # Nomad makes a task's command executable, not a file its shell runs.
  prepare = var.caravan_artifact != "" ? "chmod 0755 local/caravan" : "true"

  # Any server can save a snapshot of its state; a follower's may trail the
  # leader's by the entries it has not applied yet.
  caravan_addr = var.caravan_addr != "" ? var.caravan_addr : "{{ range service \"${var.service_name}\" }}http://{{ .Address }}:{{ .Port }}{{ break }}{{ end }}"
}

job "caravan_snapshot" {
  type        = "batch"
  datacenters = var.datacenters
  node_pool   = var.node_pool

  periodic {
    crons            = [var.schedule]
    time_zone        = var.time_zone
    prohibit_overlap = true
  }

  group "snapshot" {
    volume "snapshots" {
      type   = "host"
      source = var.snapshot_volume
    }

    # A failed attempt is retried twice on the same client, then once more
    # elsewhere; the next day's run starts afresh anyway.
    restart {
      attempts = 2
      delay    = "1m"
      mode     = "fail"
    }

    reschedule {
      attempts  = 1
      interval  = "1h"
      delay     = "5m"
      unlimited = false
    }

    task "save" {
      driver = var.driver

      volume_mount {
        volume      = "snapshots"
        destination = local.snapshot_dir
      }

      dynamic "artifact" {
        for_each = var.caravan_artifact != "" ? [var.caravan_artifact] : []
        content {
          source      = artifact.value
          destination = "local/caravan"
          mode        = "file"
        }
      }

      # CARAVAN_ADDR is where the caravan CLI finds a server.
      template {
        destination = "local/caravan.env"
        env         = true
        data        = <<-EOT
          CARAVAN_ADDR=${local.caravan_addr}
        EOT
      }

      config {
        command = "/bin/sh"
        args = ["-c", <<-EOT
          set -eu
          ${local.prepare}
          file="${local.snapshot_dir}/caravan-$(date -u +%Y%m%dT%H%M%SZ).snap"
          ${local.caravan} operator snapshot save "$file"
          find "${local.snapshot_dir}" -maxdepth 1 -name 'caravan-*.snap' -type f -mtime +${var.keep_days} -print -delete
        EOT
        ]
      }

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}
