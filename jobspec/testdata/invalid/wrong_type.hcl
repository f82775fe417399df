job "types" {
  priority = "high"
  datacenters = "dc1"
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
