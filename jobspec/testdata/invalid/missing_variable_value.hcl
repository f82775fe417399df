variable "image" {
  type = string
}

job "vars" {
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
      image = var.image
    }
  }
}
