job "svc" {
  group "worker" {
    scaling {
      min = 1
      max = 2

      policy {
        caravan {
          training {
            global_batch_size = 64
            steps_per_epoch   = 100
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"
    }
  }
}
