job "ring" {
  training {
    architecture      = "allreduce"
    mode              = "async"
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      max = 4
    }
    parameter_servers {
      max = 2
    }
  }
  worker {
    driver = "exec"
  }
  parameter_server {
    driver = "exec"
  }
}
