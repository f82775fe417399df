job "typo" {
  training {
    global_batch = 64
    steps_per_epoch = 10
  }
  elastic {
    workers {
      max = 4
    }
  }
  worker {
    driver = "exec"
  }
}
