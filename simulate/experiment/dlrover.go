package experiment

import (
	"fmt"
	"strings"
)

// §6.3's baselines with the paper's steps (D:254): auto-scaling adds 4
// workers to Wide & Deep and 1 to xDeepFM at a time, over Table 2's
// servers; the stepped Optimus 2 servers or 4 workers, and 1 or 1.
const (
	wdAutoscale   = "autoscale:ps=8:step=4"
	xdfmAutoscale = "autoscale:ps=2:step=1"
	wdOptimus     = "optimus-steps:ps_step=2:step=4"
	xdfmOptimus   = "optimus-steps:ps_step=1:step=1"
)

func init() {
	e := &Experiment{
		Name:    "dlrover-paper",
		Version: 1,
		Paper:   "DLRover (Wang et al., Ant Group; papers/002) Table 1, §6.2 (Figure 8), §6.3 (Figure 9)",
		About: "The paper's single-job experiments on 8 nodes of 64 cores at 2.5 GHz: Wide & Deep and xDeepFM from the " +
			"sampling shape (Table 1), with one worker or server at 25% of its CPU against a static TFJob at Table 2 with " +
			"static sharding (fifo on the -static workload, §6.2), and against §6.3's auto-scaling and stepped-Optimus " +
			"baselines, both capped at 200 cores and stepping every 3 min over Table 2's pods (planner/dlrover's Autoscale). " +
			"The truth is eq. 1's step time with worker contention and uneven servers, calibrated to Tables 1-2 " +
			"(drivers/sim/README.md); planner/dlrover never evaluates it. Differs from the paper: every move restarts the " +
			"whole job (30 s), straggler handling (-stragglers) is off, the slow task is the first of its role, and the job " +
			"lengths are assumed. No randomness: one seed.",
		Seeds: []uint64{1},
	}
	add := func(name, workload string, policies ...string) {
		// One job of under a second of wall time: the short version is
		// the full one.
		e.Runs = append(e.Runs, Run{Name: name, Workload: workload, Cluster: "8x0", Policies: policies, Short: workload})
	}
	add("wd", "dlrover-wd", "dlrover", "fifo")
	add("xdfm", "dlrover-xdfm", "dlrover", "fifo")
	slow := []string{"wd-slow-worker", "xdfm-slow-worker", "wd-slow-ps", "xdfm-slow-ps"}
	for _, v := range slow {
		add(v, "dlrover-"+v, "dlrover", "fifo")
		add(v+"-static", "dlrover-"+v+"-static", "fifo")
	}
	add("wd-table2", "dlrover-wd-table2", "dlrover", wdAutoscale, wdOptimus, "optimus", "drf", "fifo")
	add("xdfm-table2", "dlrover-xdfm-table2", "dlrover", xdfmAutoscale, xdfmOptimus, "optimus", "drf", "fifo")

	e.Metrics = []Metric{
		{Name: "W&D steps/s, optimize stage over the sampling shape (Table 1: 210 / 12)", Paper: 210 / 12.0, Unit: "×", Higher: true, Value: optimizeGain("wd")},
		{Name: "xDeepFM steps/s, optimize stage over the sampling shape (Table 1: 47.8 / 6.2)", Paper: 47.8 / 6.2, Unit: "×", Higher: true, Value: optimizeGain("xdfm")},
	}
	paper := map[string]float64{"wd-slow-worker": -24, "xdfm-slow-worker": -42, "wd-slow-ps": -42, "xdfm-slow-ps": -25}
	for _, v := range slow {
		m := Metric{
			Name:  fmt.Sprintf("JCT change, dlrover against a static TFJob at Table 2, %s (§6.2)", v),
			Paper: paper[v], Unit: "%", Value: changeAcross(v, "dlrover", v+"-static", "fifo"),
		}
		if strings.HasSuffix(v, "-slow-ps") {
			// Missed: the injected server is slowed below its limit (a
			// machine problem), where the paper lowered its limit, so
			// DLRover's busy-server rule never sees it; dlrover's own
			// restarts cost it 2% (planner/README.md, "## DLRover").
			m.Direction = +1
		}
		e.Metrics = append(e.Metrics, m)
	}
	e.Metrics = append(e.Metrics,
		Metric{Name: "JCT change, dlrover against auto-scaling, W&D (§6.3: more than −30%)", Paper: -30, Unit: "%", Value: Change("wd-table2", "dlrover", wdAutoscale, JCT)},
		Metric{Name: "JCT change, dlrover against stepped Optimus, W&D (§6.3: more than −30%)", Paper: -30, Unit: "%", Value: Change("wd-table2", "dlrover", wdOptimus, JCT)},
		Metric{Name: "JCT change, dlrover against auto-scaling, xDeepFM (§6.3: −10%)", Paper: -10, Unit: "%", Value: Change("xdfm-table2", "dlrover", xdfmAutoscale, JCT)},
		Metric{Name: "JCT change, dlrover against stepped Optimus, xDeepFM (§6.3: −10%)", Paper: -10, Unit: "%", Value: Change("xdfm-table2", "dlrover", xdfmOptimus, JCT)},
	)
	Register(e)
}

// optimizeGain is a metric's Value: the steps per second of dlrover's
// second configuration of run's only job (the optimize stage) over its
// first (the sampling shape), Table 1's R column.
func optimizeGain(run string) func(Seed) (float64, error) {
	return func(s Seed) (float64, error) {
		r, err := s.Result(run, "dlrover")
		if err != nil {
			return 0, err
		}
		if len(r.Jobs) != 1 || len(r.Jobs[0].Speeds) < 2 || r.Jobs[0].Speeds[0].StepsPerSecond <= 0 {
			return 0, fmt.Errorf("seed %d, run %q: want one job with a sampling and an optimize configuration", s.Seed, run)
		}
		sp := r.Jobs[0].Speeds
		return sp[1].StepsPerSecond / sp[0].StepsPerSecond, nil
	}
}

// changeAcross is a metric's Value: the change in percent of policy's
// average JCT in run against baseline's in baseRun, for baselines that run
// another workload (the paper's static TFJob).
func changeAcross(run, policy, baseRun, baseline string) func(Seed) (float64, error) {
	return func(s Seed) (float64, error) {
		p, err := s.Result(run, policy)
		if err != nil {
			return 0, err
		}
		b, err := s.Result(baseRun, baseline)
		if err != nil {
			return 0, err
		}
		if p.Summary.AvgJCT <= 0 || b.Summary.AvgJCT <= 0 {
			return 0, fmt.Errorf("seed %d: %s in %q measures %g, %s in %q %g", s.Seed, policy, run, p.Summary.AvgJCT, baseline, baseRun, b.Summary.AvgJCT)
		}
		return 100 * (p.Summary.AvgJCT/b.Summary.AvgJCT - 1), nil
	}
}
