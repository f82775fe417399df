job "cifar" {
  training {
    architecture      = "allreduce"
    global_batch_size = 64
    steps_per_epoch   = 390
    batch_size {
      min       = 4096
      max       = 128
      min_local = 512
      max_local = -1
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
    }
  }
}
