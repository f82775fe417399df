queue "nlp" {
  namespaces = [var.ns, upper("x")]
  cohort     = local.cohort
}
