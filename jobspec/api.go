package jobspec

import (
	"encoding/json"
	"fmt"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/structs"
)

// APIJob returns a parsed job as package api's Job, to register through
// the Go client, as Nomad's jobspec2 gives an api.Job. The two types encode
// to the same JSON (api's tests check it), so the job goes through it.
func APIJob(job *structs.Job) (*api.Job, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("encode job %q: %w", job.ID, err)
	}
	var out api.Job
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode job %q as the API's: %w", job.ID, err)
	}
	return &out, nil
}
