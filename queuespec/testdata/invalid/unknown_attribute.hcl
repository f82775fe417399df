queue "nlp" {
  namespaces = ["nlp-*"]
  priority   = 10
  quota {
    gpus = 4
    gpu "A100" {
      nominal = 1
      max     = 2
    }
    storage {}
  }
}

queues "typo" {}
