variable "image" {
  type    = string
  default = "ghcr.io/acme/resnet:1.4"
}

job "resnet50" {
  type     = "batch"
  priority = 60

  meta {
    team = "vision"
  }

  group "worker" {
    scaling {
      min = 1
      max = 32

      policy {
        caravan {
          role   = "worker"
          weight = 2

          training {
            framework         = "pytorch"
            architecture      = "ps"
            mode              = "sync"
            global_batch_size = 512
            steps_per_epoch   = 2500

            convergence {
              threshold  = 0.02
              max_epochs = 90
            }
          }

          checkpoint {
            timeout  = "2m"
            interval = "30m"
          }
        }
      }
    }

    task "train" {
      driver = "docker"

      config {
        image = var.image
        args  = ["python", "train.py"]
      }

      env {
        NCCL_DEBUG = "WARN"
      }

      resources {
        cpu    = 4000
        memory = 16384

        device "nvidia/gpu" {
          count = 1
        }
      }
    }

    task "log-shipper" {
      driver = "docker"

      lifecycle {
        hook    = "poststart"
        sidecar = true
      }

      config {
        image = "fluent-bit:3"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }

  group "ps" {
    scaling {
      min = 1
      max = 16

      policy {
        caravan {
          role = "ps"
        }
      }
    }

    task "ps" {
      driver = "docker"

      config {
        image = var.image
        args  = ["python", "train.py", "--role", "ps"]
      }

      resources {
        cpu    = 2000
        memory = 8192
      }
    }
  }
}
