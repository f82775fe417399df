job "measured" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 100
    speed {
      ps               = 0
      workers          = 2
      steps_per_second = -1
    }
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
