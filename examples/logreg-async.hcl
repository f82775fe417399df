# Logistic regression on a click-through dataset with asynchronous SGD on CPU:
# each worker steps on its own batch of 256 and pushes gradients to the
# parameter servers. Parameter servers run the worker template (no
# parameter_server block) with CARAVAN_ROLE=ps.
#
# Needs: on `make demo`'s simulated cluster, nothing (no task runs). On
# Nomad it cannot run on a laptop or a bare Nomad dev agent: it needs the
# exec driver, which works only on Linux clients run as root (with
# cgroups), a training program of your own at /opt/ctr/bin/train on every
# client (a placeholder, as is the dataset), Linux clients in dc1 or dc2,
# and 2000 MHz and 4 GiB per task, at least 3 tasks (2 workers, 1 ps).

variable "dataset" {
  type    = string
  default = "s3://acme-ml/criteo/day_0"
}

locals {
  batch   = 256
  workers = 24
}

job "ctr-logreg" {
  datacenters = ["dc1", "dc2"]

  training {
    framework         = "tensorflow"
    architecture      = "ps"
    mode              = "async"
    global_batch_size = local.batch * local.workers
    steps_per_epoch   = 4000

    convergence {
      threshold = 0.01
      patience  = 2
    }
  }

  elastic {
    workers {
      min = 2
      max = local.workers
    }
    parameter_servers {
      min = 1
      max = 8
    }
  }

  worker {
    driver = "exec"

    config {
      command = "/opt/ctr/bin/train"
      args    = ["--dataset", var.dataset, "--batch", tostring(local.batch)]
    }

    resources {
      cpu    = 2000
      memory = 4096
    }

    constraint {
      attribute = "${attr.kernel.name}"
      value     = "linux"
    }
  }
}
