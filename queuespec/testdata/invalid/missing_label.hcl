queue {
  namespaces = ["a"]
}
