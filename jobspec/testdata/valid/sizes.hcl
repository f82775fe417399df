# Resources as ranges: a block, the object form, "auto" and a fixed size.
variable "ps_memory" {
  default = { min = 512, max = 4096 }
}

job "sizes" {
  training {
    architecture      = "ps"
    mode              = "async"
    global_batch_size = 512
    steps_per_epoch   = 100
  }

  elastic {
    workers {
      max = 8
    }
    parameter_servers {
      max = 4
    }
  }

  worker {
    driver = "exec"
    resources {
      cpu {
        min = 1000
        max = 8000
      }
      memory = { min = 256, max = 2048, initial = 512 }
    }
  }

  parameter_server {
    driver = "exec"
    resources {
      cpu    = "auto"
      memory = var.ps_memory
    }
  }
}
