# The smallest valid jobspec: everything else takes its default.
job "minimal" {
  training {
    global_batch_size = 32
    steps_per_epoch   = 100
  }

  elastic {
    workers {
      max = 4
    }
  }

  worker {
    driver = "exec"
    config {
      command = "/bin/train"
    }
  }
}
