queue "nlp" {
  weight = 2
}

queue "empty" {
  namespaces = []
}
