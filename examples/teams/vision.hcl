# Team vision's job for the two-team example (queues.hcl): an elastic
# all-reduce job of 4 to 16 workers with one GPU each, in namespace
# "vision", whose queue is "vision". On `caravan agent -dev` no task runs:
# the simulated cluster trains it.

job "detect" {
  namespace = "vision"

  training {
    architecture      = "allreduce"
    global_batch_size = 512
    steps_per_epoch   = 500

    convergence {
      max_epochs = 50
    }
  }

  elastic {
    workers {
      min = 4
      max = 16
    }
  }

  worker {
    driver = "docker"

    config {
      image = "ghcr.io/acme/train:latest"
    }

    resources {
      cpu    = 2000
      memory = 4096

      device "nvidia/gpu" {
        count = 1
      }
    }
  }
}
