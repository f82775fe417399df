job "ops" {
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
    constraint {
      attribute = "${attr.kernel.name}"
      operator  = "~="
      value     = "linux"
    }
    resources {
      device "gpu" {
        constraint {
          operator = "distinct_hosts"
        }
      }
    }
  }
}
