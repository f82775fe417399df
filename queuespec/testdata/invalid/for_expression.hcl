queue "nlp" {
  namespaces = [for x in ["a", "b"] : "nlp-${x}"]
  cohort     = "%{for x in ["a"]}${x}%{endfor}"
}
