# BERT fine-tuning with ring all-reduce (Horovod): 1 to 8 workers with one GPU
# each, only on cards with at least 32 GiB of memory, preferring A100s.
#
# Needs: on `make demo`'s simulated cluster, nothing (no task runs; it
# lands on the A100s). On Nomad it cannot run on a laptop or a bare Nomad
# dev agent: it needs the docker driver (a running Docker daemon the Nomad
# client can use), an image of your own (ghcr.io/acme/bert is a
# placeholder), 8000 MHz and 32 GiB of memory per worker, and GPUs of at
# least 32 GiB (NVIDIA's device plugin; e2e/fakegpu's default 16 GiB
# cards do not qualify, its memory_mib can be raised).

job "bert-squad" {
  datacenters = ["dc1"]
  priority    = 70

  training {
    framework         = "horovod"
    architecture      = "allreduce"
    global_batch_size = 96
    steps_per_epoch   = 922

    convergence {
      threshold  = 0.005
      patience   = 1
      max_epochs = 2
    }
  }

  elastic {
    workers {
      min = 1
      max = 8
    }
  }

  worker {
    driver = "docker"

    config {
      image   = "ghcr.io/acme/bert:2.0"
      command = "horovodrun"
      args    = ["-np", "${CARAVAN_NUM_WORKERS}", "python", "run_squad.py", "--output_dir", "${CARAVAN_CHECKPOINT_DIR}"]
      shm_size = 2147483648
    }

    resources {
      cpu    = 8000
      memory = 32768

      device "nvidia/gpu" {
        count = 1

        constraint {
          attribute = "${device.attr.memory}"
          operator  = ">="
          value     = "32 GiB"
        }

        affinity {
          attribute = "${device.model}"
          operator  = "regexp"
          value     = "A100"
          weight    = 50
        }
      }
    }
  }
}
