job "ar" {
  type = "batch"

  group "worker" {
    scaling {
      min = 2
      max = 8

      policy {
        caravan {
          role = "worker"

          training {
            architecture      = "allreduce"
            global_batch_size = 64
            steps_per_epoch   = 100
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"

      resources {
        memory = 256
      }
    }
  }

  group "ps" {
    scaling {
      max = 2

      policy {
        caravan {
          role = "ps"
        }
      }
    }

    task "ps" {
      driver = "raw_exec"
    }
  }
}
