// Package jobspec parses Caravan's HCL v2 ML jobspec (DESIGN.md §2) into a
// canonicalized, validated structs.Job, the way Nomad's jobspec2 parses Nomad
// jobs: variable blocks with -var, -var-file and CARAVAN_VAR_<name> values,
// locals, HCL functions, driver config bodies turned into plain Go maps, and
// Nomad's runtime interpolations (${node.unique.id}, ${attr.*}, ${meta.*},
// ${device.*}, ${NOMAD_*}, ${CARAVAN_*}) kept verbatim for Nomad to resolve.
//
// It also reads the Nomad format (nomad.go): a Nomad job file whose groups
// carry Caravan's block in their scaling policy, from a file (ParseAny)
// or from Nomad's API (FromNomad).
//
// Every mistake is an hcl.Diagnostic with a source range, and all the
// mistakes of a file are reported together. Parse returns a job only when the
// diagnostics hold no error: nothing is ever half-parsed into a Job.
package jobspec
