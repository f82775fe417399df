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
//
// A namespace rule grants capabilities (CapSubmitJob, ...) in the
// namespaces its label matches; "*" in a label matches any run of
// characters, and a namespace takes the rule of the most specific label
// that matches it (an exact name first, then the longest glob). The
// coarse policies read, write and deny expand to capabilities; deny wins
// over anything granted by another policy. Operator, plugin and agent
// rules take a policy only.
//
// An ACL is immutable once compiled and safe for concurrent use. A nil
// *ACL allows nothing.
package acl
