job "bad_sizes" {
  training {
    architecture      = "ps"
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
    resources {
      cpu = "lots"
      memory {
        min = 2048
        max = 1024
      }
    }
  }
  parameter_server {
    driver = "exec"
    resources {
      cpu = { min = 0, most = 8000 }
      memory = 512
      memory {
        min = 128
      }
    }
  }
}
