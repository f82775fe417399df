# Measured speeds given as priors: Caravan fits the job's speed model to them
# instead of profiling the job before it trains.
job "measured" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 100

    speed {
      ps               = 1
      workers          = 1
      steps_per_second = 2.5
    }
    speed {
      ps               = 1
      workers          = 4
      steps_per_second = 7.2
    }
    speed {
      ps               = 2
      workers          = 8
      steps_per_second = 11
    }
  }

  elastic {
    workers {
      max = 8
    }
  }

  worker {
    driver = "exec"
    config {
      command = "/bin/train"
    }
  }
}
