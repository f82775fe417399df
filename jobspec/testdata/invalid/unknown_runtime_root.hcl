job "runtime" {
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
    env {
      HOST = "${nodes.unique.id}"
    }
  }
}
