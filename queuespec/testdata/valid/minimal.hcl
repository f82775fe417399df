queue "batch" {
  namespaces = ["batch"]
}
