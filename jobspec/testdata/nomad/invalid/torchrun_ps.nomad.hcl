job "ddp" {
  type = "batch"

  group "worker" {
    scaling {
      max = 2

      policy {
        caravan {
          role = "worker"

          training {
            architecture      = "ps"
            launcher          = "torchrun"
            global_batch_size = 64
            steps_per_epoch   = 23
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"
    }
  }
}
