package experiment

import "fmt"

// The Pollux artifact's own simulator (OSDI'21, the same 8 workloads at
// relative load 1, 16 × 4 GPUs, 60 s rounds) measured these mean JCTs
// over the workloads (../shared/data/pollux/artifact-results.md): pollux
// 2,751 s, optimus+oracle 5,682 s, tiresias 4,038 s.
const (
	polluxArtifactPollux   = 2751.0
	polluxArtifactOptimus  = 5682.0
	polluxArtifactTiresias = 4038.0
)

func init() {
	e := &Experiment{
		Name:    "pollux-osdi21",
		Version: 1,
		Paper:   "Pollux (OSDI'21) artifact, relative load 1, mean JCT over its 8 workloads",
		About: "The Pollux artifact's 8 workloads at relative load 1 on 16 × 4 GPUs under its simulator's " +
			"assumptions (-assume pollux-artifact: free profiling, 30 s per reallocation, rounds every 60 s), " +
			"pollux against tiresias and optimus+oracle; the paper's numbers are the artifact's own simulator's. " +
			"The truth is the artifact's measured traces (drivers/sim/README.md), not a policy's model.",
		Seeds: []uint64{1},
	}
	policies := []string{"pollux", "tiresias", "optimus+oracle"}
	var runs []string
	for n := 1; n <= 8; n++ {
		name := fmt.Sprintf("workload-%d", n)
		runs = append(runs, name)
		e.Runs = append(e.Runs, Run{Name: name, Workload: "pollux/workloads/" + name + ".csv", Cluster: "16x4",
			Policies: policies, Assume: "pollux-artifact", ShortLimit: 12})
	}
	meanJCT := func(s Seed, policy string) (float64, error) {
		var sum float64
		var n int
		for _, run := range runs {
			r, err := s.Result(run, policy)
			if err != nil {
				return 0, err
			}
			sum += r.Summary.AvgJCT
			n++
		}
		if sum <= 0 {
			return 0, fmt.Errorf("seed %d: %s has no JCT", s.Seed, policy)
		}
		return sum / float64(n), nil
	}
	speedup := func(baseline string) func(Seed) (float64, error) {
		return func(s Seed) (float64, error) {
			p, err := meanJCT(s, "pollux")
			if err != nil {
				return 0, err
			}
			b, err := meanJCT(s, baseline)
			if err != nil {
				return 0, err
			}
			return b / p, nil
		}
	}
	e.Metrics = []Metric{
		{Name: "mean JCT speed-up, pollux over tiresias", Paper: polluxArtifactTiresias / polluxArtifactPollux, Unit: "×", Higher: true, Value: speedup("tiresias")},
		{Name: "mean JCT speed-up, pollux over optimus+oracle", Paper: polluxArtifactOptimus / polluxArtifactPollux, Unit: "×", Higher: true, Value: speedup("optimus+oracle")},
	}
	Register(e)
}
