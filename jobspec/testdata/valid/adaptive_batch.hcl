# A job whose global batch size Caravan may choose (Pollux): it starts at
# the minimum, and a worker computes at most 256 samples a pass.
job "cifar" {
  training {
    architecture    = "allreduce"
    steps_per_epoch = 390
    batch_size {
      min       = 128
      max       = 4096
      min_local = 32
      max_local = 256
    }
  }

  elastic {
    workers {
      min = 1
      max = 16
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
      device "nvidia/gpu" {}
    }
  }
}
