queue "nlp" {
  namespaces = ["nlp-*"]
  quota {
    gpu "A100" { nominal = 8 }
    gpu "a100" { nominal = 4 }
  }
}
