# pytorch-ddp.hcl as a Nomad job file: PyTorch elastic DDP (train.py, an
# MLP on scikit-learn's digits, CPU and gloo) launched by torchrun, 1 to 2
# workers (the group's scaling bounds). Run it with `nomad job run`, and
# Caravan takes it over from Nomad: each worker is one torchrun agent,
# whose rendezvous Caravan passes in the task's environment
# (README.md, "Running it under Caravan").
#
# Needs: the raw_exec driver on the Nomad clients and a Caravan agent that
# allows it (`jobs { denied_drivers = [] }`); Debian's python3-torch and
# python3-sklearn on the clients (`tools/build.sh torch`); this repository
# at var.caravan_dir on every client; a checkpoint directory shared by
# the clients (the Nomad driver's checkpoint_dir).

variable "caravan_dir" {
  type        = string
  default     = "/opt/caravan"
  description = "Path of this repository on the Nomad clients."
}

variable "epochs" {
  type        = number
  default     = 10
  description = "Epochs to train (23 steps each)."
}

job "pytorch-ddp" {
  type = "batch"

  group "worker" {
    scaling {
      min = 1
      max = 2

      policy {
        caravan {
          role = "worker"

          training {
            framework         = "pytorch"
            architecture      = "allreduce"
            launcher          = "torchrun"
            global_batch_size = 64
            steps_per_epoch   = 23

            convergence {
              max_epochs = var.epochs
            }
          }

          # torchrun gives its workers up to 30 s to stop on SIGTERM,
          # and a worker first has to import torch (a few seconds)
          # before it catches the checkpoint signal.
          checkpoint {
            timeout = "60s"
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"

      config {
        command = "/usr/bin/python3"
        args    = ["-m", "caravan_torch", "torchrun", "${var.caravan_dir}/examples/pytorch-ddp/train.py", "--epochs", "${var.epochs}"]
      }

      env {
        PYTHONPATH      = "${var.caravan_dir}/collector/python"
        OMP_NUM_THREADS = "1"
      }

      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}
