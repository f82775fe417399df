job "range_initial" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      max = 4
    }
  }
  worker {
    driver = "exec"
    resources {
      cpu = "auto"
      memory {
        min     = 5
        max     = 512
        initial = 1024
      }
    }
  }
}
