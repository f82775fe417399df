job "a" {
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
  }
}

job "b" {
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
  }
}
