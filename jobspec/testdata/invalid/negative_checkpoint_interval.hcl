# A checkpoint interval must be a positive duration, at most a week.
job "interval" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }

  elastic {
    workers {
      min = 1
      max = 2
    }
    checkpoint {
      interval = "-10m"
    }
  }

  worker {
    driver = "raw_exec"
  }
}
