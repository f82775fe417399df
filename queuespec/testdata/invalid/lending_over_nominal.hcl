queue "nlp" {
  namespaces = ["nlp-*"]
  quota {
    gpu "A100" {
      nominal       = 8
      lending_limit = 12
    }
  }
}
