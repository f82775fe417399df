queue "-nlp" {
  namespaces = ["nlp-*", "", "nlp-[", "nlp-*"]
  cohort     = "research team"
  quota {
    gpu " " { nominal = 1 }
  }
}
