# Two teams sharing one cluster (issue 32): each is promised half of the
# 16 GPUs of `caravan agent -dev`'s simulated cluster, and either may
# borrow the other's idle GPUs until the owner needs them back, when
# Caravan shrinks the borrower through a checkpoint.
#
#   caravan queue apply examples/teams/queues.hcl
#   caravan job run -detach examples/teams/nlp.hcl
#   caravan job run -detach examples/teams/vision.hcl
#   caravan queue status nlp

queue "nlp" {
  namespaces = ["nlp", "nlp-*"]
  cohort     = "research"

  quota {
    gpu "*" {
      nominal = 8
    }
  }
}

queue "vision" {
  namespaces = ["vision", "vision-*"]
  cohort     = "research"

  quota {
    gpu "*" {
      nominal         = 8
      borrowing_limit = 4
    }
  }
}
