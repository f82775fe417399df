# ResNet-50 on ImageNet, parameter-server architecture, synchronous SGD on GPUs.
# Caravan chooses between 1 and 32 workers and 1 and 16 parameter servers and
# keeps the global batch at 512 samples per step across rescales.
#
# Needs: on `make demo`'s simulated cluster, nothing (no task runs). On
# Nomad it cannot run on a laptop or a bare Nomad dev agent: it needs the
# docker driver (a running Docker daemon the Nomad client can use), an image
# of your own in var.image (ghcr.io/acme/resnet is a placeholder), the host
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
  datacenters = var.datacenters
  priority    = 60
  weight      = 2

  meta {
    team  = "vision"
    model = "resnet50"
  }

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

  elastic {
    workers {
      min = 1
      max = 32
    }
    parameter_servers {
      min = 1
      max = 16
    }
    checkpoint {
      signal  = "SIGUSR1"
      timeout = "2m"
    }
  }

  worker {
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

  parameter_server {
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
