job "bad" {
  type = "batch"

  group "worker" {
    scaling {
      max = 4

      policy {
        caravan {
          role = "worker"
          epochs = 3

          training {
            mode              = "synch"
            global_batch_size = 64
            steps_per_epoch   = 100
          }

          checkpoint {
            interval = "0s"
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"

      config {
        command = "/bin/true"
      }

      resources {
        cpu    = 0
        memory = 256
      }
    }
  }

  group "ps" {
    scaling {
      min = 0
      max = 2

      policy {
        caravan {
          role = "ps"

          checkpoint {
            signal = "SIGUSR1"
          }
        }
      }
    }

    task "ps" {
      driver = "raw_exec"

      config {
        command = "/bin/true"
      }
    }
  }

  group "tensorboard" {
    task "tb" {
      driver = "raw_exec"
    }
  }
}
