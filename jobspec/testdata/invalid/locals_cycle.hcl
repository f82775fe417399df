locals {
  a = local.b
  b = "${local.a}-x"
}

job "cycle" {
  name = local.a
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      max = 4
    }
  }
  worker {
    driver = "exec"
  }
}
