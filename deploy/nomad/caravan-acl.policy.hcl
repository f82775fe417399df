# The Nomad ACL policy of the token Caravan's servers use (nomad { token },
# or NOMAD_TOKEN): the least Caravan needs. See deploy/README.md, "Nomad
# ACLs", for what each rule is for and how to keep Caravan to some
# namespaces.
#
#   nomad acl policy apply -description "Caravan servers" caravan deploy/nomad/caravan-acl.policy.hcl
#   nomad acl token create -name caravan -policy caravan

namespace "*" {
  capabilities = [
    "list-jobs",       # watch the job lists (blocking queries, namespace=*)
    "read-job",        # read a job, its versions and its allocations
    "submit-job",      # register jobs (with check-index), stop them, tag users' versions
    "alloc-lifecycle", # signal allocations to checkpoint before a rescale
  ]
}

node {
  policy = "read" # list the nodes with their resources and devices
}
