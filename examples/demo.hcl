# A small CPU-only job: the one `make demo` runs on the embedded simulated
# cluster. On Nomad its task is Caravan's example trainer (a real SGD
# program, examples/trainer), installed on the clients as var.trainer.

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
