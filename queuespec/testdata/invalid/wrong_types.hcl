queue "nlp" {
  namespaces = "nlp-*"
  cohort     = ["research"]
  quota {
    gpu "A100" {
      nominal         = 1.5
      borrowing_limit = "lots"
      lending_limit   = 1
    }
    cpu    = "256000"
    memory = {}
  }
}
