queue "ops" {
  namespaces = ["ops-${"prod"}", "ops-[a-c]*"]
  weight     = 0.5 + 0.25
  cohort     = true ? "infra" : "none"

  quota {
    gpu "T4" {
      nominal       = 2 * 4
      lending_limit = -0 + 8
    }
    memory = 64 * 1024
  }
}
