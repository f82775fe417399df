package nomad

import (
	"context"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// metaPlacementDrained is the placement fingerprint of a version drain
// wrote: it matches no placement, so that any plan that names the job
// submits it again.
const metaPlacementDrained = "drained"

// drain sets every group of a Nomad job to count 0 before the job is
// stopped, at the version it reads (Nomad's check-index), and does
// nothing to a job already stopped or at count 0. Nomad v1.11.0 can
// leave an allocation of a batch job running when the job is stopped
// after a group was scaled down (README, Limits; the job stays stopped
// and the task runs on), while a count of 0 stops them all. It costs the
// job one more version. It runs on the job's worker.
func (d *Driver) drain(ctx context.Context, id namespacedID) error {
	info, err := d.readJob(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Stop != nil && *info.Stop {
		return nil
	}
	drained := true
	for _, tg := range info.TaskGroups {
		if tg.Count != nil && *tg.Count > 0 {
			drained = false
			tg.Count = new(0)
		}
	}
	if drained || info.JobModifyIndex == nil {
		return nil
	}
	if info.Meta[metaJobID] != "" {
		info.Meta[metaPlacement] = metaPlacementDrained
	}
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.WriteOptions{Namespace: id.Namespace}).WithContext(ctx)
	if _, _, err := d.client.Jobs().EnforceRegister(info, *info.JobModifyIndex, q); err != nil {
		return fmt.Errorf("scale Nomad job %s to 0 before stopping it: %w", id.ID, err)
	}
	return nil
}
