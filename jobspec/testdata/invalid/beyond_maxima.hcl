job "huge" {
  training {
    mode              = "sync"
    global_batch_size = 9223372036854775783
    steps_per_epoch   = 9223372036854775807
    convergence {
      threshold  = 0.01
      patience   = 1000000
      max_epochs = 1000000000
    }
  }
  elastic {
    workers {
      max = 9223372036854775782
    }
  }
  worker {
    driver = "exec"
    resources {
      cpu    = 100000000
      memory = 2000000000
      device "nvidia/gpu" {
        count = 100000
      }
    }
  }
}
