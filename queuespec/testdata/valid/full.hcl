# Two teams of a research cohort, and the catch-all queue.
queue "nlp" {
  namespaces = ["nlp-*", "translation"]
  weight     = 2
  cohort     = "research"

  quota {
    gpu "A100" {
      nominal         = 16
      borrowing_limit = 16
      lending_limit   = 8
    }
    gpu "*" { nominal = 4 }
    cpu    = 256000
    memory = 1048576
  }
}

queue "vision" {
  namespaces = ["vision-*"]
  weight     = 1.5
  cohort     = "research"

  quota {
    gpu "H100" {
      nominal = 0 # borrows only
    }
  }
}

queue "default" {
  quota {
    cpu = 1000 * 64
  }
}
