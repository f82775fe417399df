# A small CPU-only job: the one `make demo` runs on the embedded simulated
# cluster. On Nomad its task is Caravan's example trainer (a real SGD
# program, examples/trainer), installed on the clients as var.trainer.
#
# Needs: on `make demo`'s simulated cluster, nothing (no task runs). On
# Nomad: the raw_exec driver enabled on the clients, caravan-trainer on
# them (`make trainer` builds bin/caravan-trainer; pass its path with
# -var trainer=...), and a Caravan agent that allows raw_exec
# (`jobs { denied_drivers = [] }`). No GPUs, no root, no Docker: it runs on
# a laptop's bare Nomad dev agent (its demo.nomad.hcl twin is what
# `make try-nomad` runs).

variable "trainer" {
  type        = string
  default     = "caravan-trainer"
  description = "Path of the example trainer binary on the Nomad clients."
}

job "demo" {
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

  elastic {
    workers {
      min = 1
      max = 4
    }
    parameter_servers {
      min = 1
      max = 2
    }
    checkpoint {
      timeout = "30s"
    }
  }

  worker {
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
