# Every mistake of a file is reported in one run.
job "many" {
  priority = 500
  weight   = -1

  training {
    architecture      = "mesh"
    global_batch_size = 0
    steps_per_epoch   = 10
    convergence {
      threshold = 3
    }
  }

  elastic {
    workers {
      min = 0
      max = 4
    }
    checkpoint {
      signal  = "USR1"
      timeout = "soon"
    }
  }

  worker {
    resources {
      memory = 4
    }
    affinity {
      attribute = "${node.class}"
      value     = "x"
      weight    = 0
    }
  }
}
