job "config" {
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
    driver = "docker"
    config {
      image = "x"
      mount "data" {
        target = "/data"
      }
      port = 1
      port {
        label = "p"
      }
    }
  }
}
