// Package queuespec parses queue files, Caravan's HCL for queues (issue
// 32: teams sharing one cluster with guaranteed GPU quotas), into
// canonicalized, validated []*structs.Queue, and writes queues back as a
// queue file (Format) for `caravan queue inspect`.
//
// A queue file holds one or more queue blocks, their names unique within
// the file:
//
//	queue "nlp" {
//	  namespaces = ["nlp-*"]  # Nomad namespaces, names or path.Match patterns
//	  weight     = 2          # optional, > 0, default 1: share when borrowing
//	  cohort     = "research" # optional: the queues that lend to each other
//	  quota {                 # optional: no quota limits nothing
//	    gpu "A100" {          # GPU type, matched in the node's type ignoring case
//	      nominal         = 16 # required: GPUs the queue may use at any time
//	      borrowing_limit = 16 # optional: most GPUs borrowed beyond nominal; absent for no cap
//	      lending_limit   = 8  # optional: most idle nominal GPUs lent; absent to lend all
//	    }
//	    gpu "*" { nominal = 4 } # "*" is any GPU type; a node's GPUs count against the first match
//	    cpu    = 256000          # MHz, optional: absent for no limit
//	    memory = 1048576         # MB, optional: absent for no limit
//	  }
//	}
//
// Only HCL's native syntax is read, with no variables and no functions:
// values are literals or expressions of literals (1024 * 256), without
// for expressions. A 0 written for weight, cpu or memory is an error,
// not a request for the default: leave the argument out instead. Two
// queues of one file may not give the same namespace pattern, which the
// server would refuse (structs.QueueConflict).
//
// Every mistake is an hcl.Diagnostic with a source range, including those
// structs.Queue.Validate finds, and all the mistakes of a file are
// reported together, sorted by position. Parse returns queues only when
// the diagnostics hold no error: a file is applied whole or not at all.
// The input is bounded (limits.go) before it is parsed, so a hostile file
// costs a bounded time and memory to refuse.
package queuespec
