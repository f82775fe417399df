queue "nlp" {
  namespaces = ["nlp-*"]
  quota {
    gpu "A100" {
      nominal         = -2
      borrowing_limit = -1
    }
    cpu    = -1000
    memory = 0
  }
}
