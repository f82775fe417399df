queue "nlp" {
  namespaces = ["nlp-*"]
}

queue "vision" {
  namespaces = ["vision-*", "nlp-*"]
}

queue "nlp" {
  namespaces = ["other"]
}
