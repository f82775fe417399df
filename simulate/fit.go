package simulate

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// fitChecks say, per policy, what more a workload must have for the
// policy to do what it is named for than Fit reads from its declaration;
// each returns "" when the workload has it.
var fitChecks = map[string]func(*sim.Workload) string{
	"dlrover": func(wl *sim.Workload) string {
		if anyJob(wl, func(j *structs.Job) bool {
			return ranged(j.Worker) || ranged(j.ParameterServer)
		}) {
			return ""
		}
		return "dlrover sizes only roles whose cpu or memory is a range, and no job of the workload has one: it runs every job at its minimum"
	},
}

// subtasksUse says what a built-in that reads subtasks does with them, for
// Fit's warning; another policy gets a sentence naming it.
var subtasksUse = map[string]string{
	"harmony": "harmony groups jobs by their computation and communication subtask times",
	"cruise":  "cruise splits workers and servers by their computation and communication times",
}

// batchBounds is the check of every policy that chooses batch sizes: some
// job must have batch bounds, its own or the Pollux artifact's
// (sim.Arrival.Adaptive).
func batchBounds(name string, wl *sim.Workload) string {
	if slices.ContainsFunc(wl.Arrivals, func(a sim.Arrival) bool { return a.Adaptive != nil }) ||
		anyJob(wl, func(j *structs.Job) bool { return j.Training != nil && j.Training.BatchSize != nil }) {
		return ""
	}
	return name + " adapts batch sizes only for jobs with training { batch_size { … } } bounds, or a Pollux model's jobs, and the workload has neither"
}

// Fit returns a warning when a policy, alg under its options, does not fit
// a workload: it lacks what the policy plans from, so the run says little
// about the policy. "" when it fits, or the policy has no requirement.
// What alg declares (planner.CapabilitiesOf) says what it plans from: a
// policy that chooses batch sizes needs jobs whose batch may vary, and one
// that reads subtasks needs jobs that report them.
func Fit(alg planner.Algorithm, wl *sim.Workload) string {
	name := alg.Name()
	caps := planner.CapabilitiesOf(alg)
	switch {
	case caps.ChoosesBatch:
		return batchBounds(name, wl)
	case caps.ReadsEstimator(planner.EstimatorSubtasks):
		use, ok := subtasksUse[name]
		if !ok {
			use = name + " plans from the jobs' computation and communication subtask times"
		}
		return needSubtasks(use)(wl)
	}
	if check, ok := fitChecks[name]; ok {
		return check(wl)
	}
	return ""
}

func needSubtasks(what string) func(*sim.Workload) string {
	return func(wl *sim.Workload) string {
		for _, a := range wl.Arrivals {
			switch a.Truth.(type) {
			case *sim.SubtaskTruth, *sim.CruiseTruth:
				return ""
			}
		}
		return what + ", and no job of the workload reports them (try -workload harmony or cruise)"
	}
}

func anyJob(wl *sim.Workload, pred func(*structs.Job) bool) bool {
	return slices.ContainsFunc(wl.Arrivals, func(a sim.Arrival) bool { return a.Job != nil && pred(a.Job) })
}

func ranged(r *structs.Role) bool {
	return r != nil && r.Resources != nil && r.Resources.Ranged()
}

// BuiltinWorkloads lists the workloads -workload names without a file:
// the generated ones (with their optional :jobs:gap), the DLRover
// experiments, and the CSV files embedded in drivers/sim.
func BuiltinWorkloads() []string {
	out := []string{"parametric[:jobs[:gap]]", "harmony[:jobs]", "cruise[:jobs]", "dorm[:jobs[:gap]]",
		"specon[:jobs[:gap]]", "specon-random[:jobs[:gap]]", "dlrover[:jobs[:gap]]",
		"optimus[:jobs[:span]]", "optimus-paa[:jobs[:span]]", "sia/{saturn,philly,newtrace}/N", "sia/scale/FILE"}
	for _, m := range []string{"wd", "xdfm"} {
		for _, v := range []string{"", "-slow-worker", "-slow-ps"} {
			out = append(out, "dlrover-"+m+v+"[-static]")
		}
		out = append(out, "dlrover-"+m+"-table2")
	}
	// The embedded CSVs, a directory at a time: "pollux/workloads/*.csv (8)".
	dirs := map[string]int{}
	_ = fs.WalkDir(sim.Data, ".", func(p string, d fs.DirEntry, err error) error {
		// pollux/traces/<model>/ and sia/traces/<model>/ are the models'
		// measurements.
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".csv") && !strings.HasPrefix(path.Dir(p), "pollux/traces/") && !strings.HasPrefix(path.Dir(p), "sia/traces/") {
			dirs[path.Dir(p)]++
		}
		return nil
	})
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		out = append(out, fmt.Sprintf("%s/*.csv (%d)", d, dirs[d]))
	}
	return out
}

// unknownWorkload is the error for a name that is neither built in nor a
// file.
func unknownWorkload(name string) error {
	all := BuiltinWorkloads()
	return fmt.Errorf("workload %q is neither a file nor a built-in workload; the built-in ones are %s",
		name, strings.Join(all, ", "))
}
