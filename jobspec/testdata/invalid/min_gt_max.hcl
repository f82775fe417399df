job "bounds" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = 8
      max = 4
    }
  }
  worker {
    driver = "exec"
  }
}
