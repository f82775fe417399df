# demo.hcl as a Nomad job file: a small CPU-only job whose tasks run
# Caravan's example trainer (a real SGD program, examples/trainer),
# installed on the Nomad clients as var.trainer. Run it with
# `nomad job run`, and Caravan takes it over from Nomad. The parameter
# servers run the same trainer (it reads its role from CARAVAN_ROLE).
# Its tasks use raw_exec, which Caravan agents deny by default: the agent
# needs `jobs { denied_drivers = [] }`, or the job gets a JobRejected
# event and Nomad runs it as written.
#
# Needs: the raw_exec driver enabled on the Nomad clients, caravan-trainer
# on them (`make trainer` builds bin/caravan-trainer; pass its path with
# -var trainer=...), and a Caravan agent with driver = "nomad" that allows
# raw_exec. No GPUs, no root, no Docker: it runs on a laptop's bare Nomad
# dev agent, and `make try-nomad` runs it so, end to end.

variable "trainer" {
  type        = string
  default     = "caravan-trainer"
  description = "Path of the example trainer binary on the Nomad clients."
}

job "demo" {
  type = "batch"

  group "worker" {
    scaling {
      min = 1
      max = 4

      policy {
        caravan {
          role = "worker"

          training {
            architecture      = "ps"
            mode              = "sync"
            global_batch_size = 64
            steps_per_epoch   = 50

            convergence {
              threshold  = 0.01
              patience   = 2
              max_epochs = 20
            }
          }

          checkpoint {
            timeout = "30s"
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"

      config {
        command = var.trainer
        args    = ["-model", "logreg", "-features", "64"]
      }

      resources {
        cpu    = 200
        memory = 64
      }
    }
  }

  group "ps" {
    scaling {
      min = 1
      max = 2

      policy {
        caravan {
          role = "ps"
        }
      }
    }

    task "ps" {
      driver = "raw_exec"

      config {
        command = var.trainer
        args    = ["-model", "logreg", "-features", "64"]
      }

      resources {
        cpu    = 200
        memory = 64
      }
    }
  }
}
