job "devices" {
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
      device "nvidia//gpu" {
        count = 0
      }
      device "a/b/c/d" {}
    }
  }
}
