queue "nlp" {
  namespaces = ["nlp-*"
}
