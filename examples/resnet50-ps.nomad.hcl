# resnet50-ps.hcl as a Nomad job file: ResNet-50 on ImageNet,
# parameter-server architecture, synchronous SGD on GPUs. Run it with
# `nomad job run`, and Caravan takes it over from Nomad: it chooses between
# 1 and 32 workers (the worker group's scaling bounds) and 1 and 16
# parameter servers (the ps group's), and keeps the global batch at 512
# samples per step across rescales. The worker group's caravan block holds
# what a Caravan jobspec says in its training and elastic blocks.
#
# Needs: it cannot run on a laptop or a bare Nomad dev agent: the docker
# driver (a running Docker daemon the Nomad client can use), an image of
# your own in var.image (ghcr.io/acme/resnet is a placeholder), the host
# directory /mnt/datasets bind-mounted (the client's docker plugin must
# allow host paths: `volumes { enabled = true }`), 4000 MHz and 16 GiB per
# worker, and a GPU of at least 16 GiB per worker (NVIDIA's device plugin,
# or e2e/fakegpu's fake V100s to schedule without running a real trainer).

variable "image" {
  type    = string
  default = "ghcr.io/acme/resnet:1.4"
}

variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

job "resnet50" {
  type        = "batch"
  datacenters = var.datacenters
  priority    = 60

  meta {
    team  = "vision"
    model = "resnet50"
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
            steps_per_epoch   = 2500 # 1,281,167 images / 512

            convergence {
              threshold  = 0.02
              patience   = 3
              max_epochs = 90
            }
          }

          checkpoint {
            signal  = "SIGUSR1"
            timeout = "2m"
          }
        }
      }
    }

    task "train" {
      driver = "docker"

      config {
        image = var.image
        args  = ["python", "train.py", "--arch", "resnet50", "--data", "/data/imagenet"]

        mount {
          type   = "bind"
          source = "/mnt/datasets"
          target = "/data"
        }
      }

      env {
        NCCL_DEBUG = "WARN"
        DATA_DIR   = "/data/imagenet"
      }

      resources {
        cpu    = 4000
        memory = 16384

        device "nvidia/gpu" {
          count = 1

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "16 GiB"
          }
        }
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
