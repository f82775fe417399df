job "one_line" {
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
      cpu { min = 1000  max = 8000 }
    }
  }
}
