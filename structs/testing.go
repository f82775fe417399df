package structs

import "time"

// MockJob returns a valid, canonicalized parameter-server job that tests may
// modify freely; every call returns a new object.
func MockJob() *Job {
	j := &Job{
		ID:          "resnet50",
		Datacenters: []string{"dc1"},
		Meta:        map[string]string{"team": "vision"},
		Training: &Training{
			Framework:       "pytorch",
			Architecture:    ArchitecturePS,
			Mode:            ModeSync,
			GlobalBatchSize: 512,
			StepsPerEpoch:   2500,
			Convergence:     &Convergence{Threshold: 0.02, Patience: 3, MaxEpochs: 90},
		},
		Elastic: &Elastic{
			Workers:          Bounds{Min: 1, Max: 32},
			ParameterServers: &Bounds{Min: 1, Max: 16},
			Checkpoint:       &Checkpoint{Signal: "SIGUSR1", Timeout: 2 * time.Minute},
		},
		Worker: &Role{
			Driver: "docker",
			Config: map[string]any{"image": "ghcr.io/acme/resnet:1.4", "args": []any{"python", "train.py"}},
			Env:    map[string]string{"NCCL_DEBUG": "WARN"},
			Resources: &Resources{
				CPU:      4000,
				MemoryMB: 16384,
				Devices: []*RequestedDevice{{
					Name:        "nvidia/gpu",
					Count:       1,
					Constraints: []*Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "16 GiB"}},
				}},
			},
		},
	}
	j.Canonicalize()
	return j
}
