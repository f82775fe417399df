job "plain" {
  type = "batch"

  group "g" {
    scaling {
      min = 1
      max = 2

      policy {
        check "cpu" {
          source = "nomad-apm"
        }
      }
    }

    task "t" {
      driver = "raw_exec"
    }
  }
}
