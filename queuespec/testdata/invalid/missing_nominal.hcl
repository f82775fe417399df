queue "nlp" {
  namespaces = ["nlp-*"]
  quota {
    gpu "A100" {
      lending_limit = 4
    }
  }
  quota {}
}
