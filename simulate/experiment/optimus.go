package experiment

import (
	"time"

	"github.com/caravan-sched/caravan/simulate"
)

// Optimus (EuroSys'18) §6.2 and Fig. 13: on its testbed, Optimus finishes
// its jobs with 2.39× shorter average JCT and 1.63× shorter makespan than
// DRF, and all jobs in 4.1 h against DRF's 6.7 h and Tetris's 5.0 h; its
// scaling costs 2.54% of the makespan.
const (
	optimusPaperJCT          = 2.39
	optimusPaperMakespan     = 1.63
	optimusPaperHoursOptimus = 4.1
	optimusPaperHoursTetris  = 5.0
	optimusPaperScaling      = 2.54
)

// optimusPolicy is Optimus as §6.1 runs it: priority (young) factor 1.
const optimusPolicy = "optimus:young_factor=1"

func init() {
	interval := 10 * time.Minute // §6.1: "Each scheduling interval is 10 minutes long"
	e := &Experiment{
		Name:    "optimus-eurosys18",
		Version: 1,
		Paper:   "Optimus (EuroSys'18) §6.2, Fig. 11 and 13",
		About: "§6.1's workload: 30 jobs arriving uniformly over [0, 12000] s, each one of Table 1's nine models, " +
			"async or sync at random, convergence threshold 1-5%, on the testbed's 160 cores as 13 nodes of 12 cores " +
			"(26 containers of 5 cores and 10 GB; the paper's servers hold 27), 10-minute rounds, young factor 1. " +
			"The truth (drivers/sim OptimusTruth) is Table 2's measured speed functions, scaled to each model's size by eq. 2, " +
			"with eq. 2's slowest parameter server under the job's assignment: MXNet's default for DRF and Tetris (run mxnet), " +
			"PAA (§5.3) for Optimus (run paa). DRF grows parameter servers 1:1 with workers; Tetris runs each job at a " +
			"request of 2 servers and 2 workers (1:1; the paper gives no size). The paper does not give its job count, " +
			"dataset downscaling or the unit of eq. 4's M; these are ours (drivers/sim/README.md).",
		Seeds: []uint64{1, 2, 3},
		Runs: []Run{
			{Name: "mxnet", Workload: "optimus", Policies: []string{"drf", "tetris", optimusPolicy},
				Interval: interval, Short: "optimus:10:4000"},
			{Name: "paa", Workload: "optimus-paa", Policies: []string{optimusPolicy, "optimus+oracle", "optimus-relative:young_factor=1"},
				Interval: interval, Short: "optimus-paa:10:4000"},
		},
	}
	// across compares Optimus's run (with PAA) with a baseline's (without).
	across := func(baseline string, f Measure) func(Seed) (float64, error) {
		return SpeedupAcross("paa", optimusPolicy, "mxnet", baseline, f)
	}
	e.Metrics = []Metric{
		{Name: "avg JCT speed-up, optimus over drf", Paper: optimusPaperJCT, Unit: "×", Higher: true,
			Value: across("drf", JCT), Direction: -1},
		{Name: "makespan speed-up, optimus over drf", Paper: optimusPaperMakespan, Unit: "×", Higher: true,
			Value: across("drf", Makespan)},
		{Name: "makespan speed-up, optimus over tetris", Paper: optimusPaperHoursTetris / optimusPaperHoursOptimus, Unit: "×", Higher: true,
			Value: across("tetris", Makespan)},
		{Name: "scaling overhead, optimus, % of its jobs' time", Paper: optimusPaperScaling, Unit: "%", Higher: false, Level: true,
			Value: Field("paa", optimusPolicy, func(s simulate.Summary) float64 { return 100 * s.RegroupShare })},
	}
	Register(e)
}
