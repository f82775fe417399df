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
// while its own scheduler still checks resources and assigns devices.
//
// Rescaling: Enact checkpoints running jobs before it changes them and
// never applies a rescale whose checkpoint was not confirmed by a sample
// the trainers reported (DESIGN.md §3). Status reads the allocations back.
// The driver keeps what it submitted in the Nomad jobs' metadata, so a new
// leader adopts the Nomad jobs of the last instead of submitting them
// again.
package nomad
