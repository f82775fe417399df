job "batch" {
  training {
    mode              = "sync"
    global_batch_size = 500
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      max = 32
    }
  }
  worker {
    driver = "exec"
  }
}
