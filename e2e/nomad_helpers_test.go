//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// catFile returns a file of an allocation's folder, such as a task's log
// "alloc/logs/<task>.stdout.0".
func catFile(c *nomadapi.Client, alloc *nomadapi.Allocation, path string) (string, error) {
	r, err := c.AllocFS().Cat(alloc, path, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	return string(out), err
}

// completedAlloc waits until an allocation of a Nomad job completes, and
// fails the test as soon as one fails.
func completedAlloc(t *testing.T, c *nomadapi.Client, jobID string) *nomadapi.Allocation {
	t.Helper()
	var allocID string
	agent.WaitFor(t, time.Minute, "an allocation of "+jobID+" to complete", func() error {
		allocs, _, err := c.Jobs().Allocations(jobID, false, nil)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			switch a.ClientStatus {
			case nomadapi.AllocClientStatusComplete:
				allocID = a.ID
				return nil
			case nomadapi.AllocClientStatusFailed:
				return fmt.Errorf("allocation %s failed: %+v", a.ID, a.TaskStates)
			}
		}
		return fmt.Errorf("%d allocations, none complete yet", len(allocs))
	})
	alloc, _, err := c.Allocations().Info(allocID, nil)
	must.NoError(t, err)
	return alloc
}
