queue "zero" {
  namespaces = ["a"]
  weight     = 0
}

queue "negative" {
  namespaces = ["b"]
  weight     = -1
}

queue "text" {
  namespaces = ["c"]
  weight     = "heavy"
}
