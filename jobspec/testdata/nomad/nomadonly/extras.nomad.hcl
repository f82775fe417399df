job "extras" {
  type = "batch"

  reschedule {
    attempts  = 1
    unlimited = false
  }

  group "trainers" {
    count = 2

    network {
      port "metrics" {}
    }

    restart {
      attempts = 0
    }

    scaling {
      enabled = true
      min     = 2
      max     = 8

      policy {
        cooldown = "1m"

        caravan {
          role = "worker"

          training {
            global_batch_size = 64
            steps_per_epoch   = 100
          }
        }
      }
    }

    task "setup" {
      driver = "raw_exec"

      lifecycle {
        hook = "prestart"
      }

      config {
        command = "/bin/true"
      }
    }

    task "train" {
      driver       = "raw_exec"
      kill_timeout = "30s"

      config {
        command = "/opt/train"
      }

      template {
        data        = "rank={{ env \"CARAVAN_RANK\" }}"
        destination = "local/rank"
      }

      service {
        name = "trainer"
        port = "metrics"
      }

      resources {
        cpu        = 500
        memory     = 256
      }
    }
  }
}
