# Variables of several types, chained locals, functions, and Nomad runtime
# interpolations that must reach Nomad verbatim.
variable "gpus" {
  type    = number
  default = 2
}

variable "tags" {
  type    = list(string)
  default = ["a", "b"]
}

variable "image" {
  default = "trainer:1"
}

locals {
  name    = "${local.prefix}-${var.gpus}g"
  prefix  = upper("exp")
  workers = var.gpus * 4
}

job "interp" {
  name = local.name

  meta {
    tags    = join(",", var.tags)
    literal = "$${not.interpolated}"
  }

  training {
    mode              = "async"
    global_batch_size = 100
    steps_per_epoch   = 10
  }

  elastic {
    workers {
      min = 2
      max = local.workers
    }
  }

  worker {
    driver = "docker"

    config {
      image   = var.image
      args    = ["--node", "${node.unique.id}", "--rack=${meta.rack}", "--alloc", "${NOMAD_ALLOC_ID}"]
      ports   = ["grpc"]
      labels  = { job = "interp", gpus = var.gpus }
      ratio   = 0.5
      enabled = true

      mount {
        type   = "bind"
        target = "/data"
      }
      mount {
        type   = "tmpfs"
        target = "/scratch"
      }
    }

    env {
      RANK    = "${CARAVAN_RANK}"
      KERNEL  = "${attr.kernel.name}"
      THREADS = 8
    }

    resources {
      device "gpu" {
        count = var.gpus

        constraint {
          attribute = "${device.attr.memory}"
          operator  = "is"
          value     = "16 GiB"
        }
      }
    }

    constraint {
      attribute = "${meta.pool}"
      operator  = "set_contains_any"
      value     = "gpu,ml"
    }

    affinity {
      attribute = "${node.class}"
      value     = "fast"
    }
  }
}
