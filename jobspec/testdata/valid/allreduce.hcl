job "ring" {
  namespace = "research"
  priority  = 10

  training {
    architecture      = "allreduce"
    global_batch_size = 64
    steps_per_epoch   = 1000
  }

  elastic {
    workers {
      min = 2
      max = 8
    }
    checkpoint {
      signal   = "SIGUSR2"
      timeout  = "45s"
      interval = "10m"
    }
  }

  worker {
    driver = "raw_exec"
    config {
      command = "train"
    }
    resources {
      cpu    = 1000
      memory = 1024
      device "nvidia/gpu/Tesla V100-SXM2-16GB" {}
    }
  }
}
