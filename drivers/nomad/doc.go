// Package nomad is the driver that runs Caravan's plans on a real Nomad
// cluster through github.com/hashicorp/nomad/api.
//
// Inventory: Nodes follows Nomad's node list with blocking queries and
// reports each node's capacity (less what it reserves), attributes, meta
// and devices (from NodeResources.Devices, healthy instances and typed
// attributes), so that Caravan plans onto what Nomad would schedule.
//
// Translation: each Caravan job becomes one Nomad batch job
// `caravan-<id>` (Translate) with a task group per role and node whose
// count is the tasks the plan gives the role there, pinned to the node by
// a ${node.unique.id} constraint, so that Nomad enacts Caravan's placement
// while its own scheduler still checks resources and assigns devices. On a
// node of a GPU type (structs.Node.GPUType), a group's GPU requests name
// that model, so that Nomad assigns no other.
//
// Jobs declared in Nomad: Declared follows Nomad's job list and reports,
// per Nomad job, what its current version is; a user's version whose
// groups carry a caravan scaling policy declares a Caravan job
// (jobspec.FromNomad), which the leader registers. Such a job runs as
// versions of the user's Nomad job itself (translateDeclared), written
// only while the version the job was declared by, or one Caravan wrote
// since, is current (Nomad's check-index); its versions are marked by
// their metadata, so that a later user's version is told apart.
//
// Rescaling: Enact checkpoints running jobs before it changes them and
// never applies a rescale whose checkpoint was not confirmed by a sample
// the trainers reported (DESIGN.md §3). Status reads the allocations back
// from views kept in the background; Nomad writes run on per-job workers,
// so that no call of the leader's waits on Nomad.
// The driver keeps what it submitted in the Nomad jobs' metadata, so a new
// leader adopts the Nomad jobs of the last instead of submitting them
// again.
package nomad
