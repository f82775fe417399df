job "empty" {
  elastic {
    workers {
      max = 2
    }
  }

  worker {
    config {
      command = "train"
    }
  }
}
