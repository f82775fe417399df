// Package acl parses Caravan's ACL policies and compiles them into an ACL
// that answers whether a request may do something, modelled on Nomad's acl
// package.
//
// A policy is HCL:
//
//	namespace "default" { policy = "write" }
//	namespace "ml-*"    { capabilities = ["list-jobs", "read-job", "report"] }
//	operator { policy = "read" }
//	plugin   { policy = "read" }
//	agent    { policy = "read" }
//	queue    { policy = "read" }
//
// A namespace rule grants capabilities (CapSubmitJob, ...) in the
// namespaces its label matches; "*" in a label matches any run of
// characters, and a namespace takes the rule of the most specific label
// that matches it (an exact name first, then the longest glob). The
// coarse policies read, write and deny expand to capabilities; deny wins
// over anything granted by another policy. Operator, plugin, agent and
// queue rules take a policy only; a queue rule governs the cluster's
// queues, which belong to no namespace, as Nomad's quota rule does.
//
// An ACL is immutable once compiled and safe for concurrent use. A nil
// *ACL allows nothing.
package acl
