package simulate

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Report is what summary.json holds: the workload, the cluster and one
// summary per policy.
type Report struct {
	Workload string
	Cluster  string
	Seed     uint64
	Policies map[string]Summary
	// Speedups compare every policy with each baseline of SpeedupBaselines
	// that ran, in the order of the results.
	Speedups []Speedup `json:",omitempty"`
	// PlanTimes are each policy's plan times (Result.PlanTime).
	PlanTimes map[string]PlanTime `json:",omitempty"`
	// Tenants are each policy's outcome per queue (Tenants), for the
	// runs that held queues (Result.Queues).
	Tenants map[string][]TenantOutcome `json:",omitempty"`
}

// SpeedupBaselines are the policies others are compared with, as the
// dissertation compares Harmony with isolated and naively co-located jobs
// (§4.4.3).
var SpeedupBaselines = []string{"isolated", "colocated"}

// Speedup is how much faster Policy is than Baseline: the baseline's
// average JCT over the policy's, and the same for the makespan (above 1:
// the policy is faster), as Figure 4.10 reports them.
type Speedup struct {
	Policy   string
	Baseline string
	JCT      float64
	Makespan float64
}

// NewReport gathers the summaries of results.
func NewReport(workload, cluster string, seed uint64, results []*Result) *Report {
	r := &Report{Workload: workload, Cluster: cluster, Seed: seed, Policies: map[string]Summary{}}
	for _, res := range results {
		r.Policies[res.Policy] = res.Summary
		if res.Summary.Plans > 0 {
			if r.PlanTimes == nil {
				r.PlanTimes = map[string]PlanTime{}
			}
			r.PlanTimes[res.Policy] = res.PlanTime
		}
		if len(res.Queues) > 0 {
			if r.Tenants == nil {
				r.Tenants = map[string][]TenantOutcome{}
			}
			r.Tenants[res.Policy] = Tenants(res.Jobs, res.Allocs, res.Queues)
		}
	}
	for _, b := range SpeedupBaselines {
		base, ok := r.Policies[b]
		if !ok || base.AvgJCT <= 0 || base.Makespan <= 0 {
			continue
		}
		for _, res := range results {
			s := res.Summary
			if res.Policy == b || s.AvgJCT <= 0 || s.Makespan <= 0 {
				continue
			}
			r.Speedups = append(r.Speedups, Speedup{Policy: res.Policy, Baseline: b, JCT: base.AvgJCT / s.AvgJCT, Makespan: base.Makespan / s.Makespan})
		}
	}
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJobsCSV writes one row per job and policy: arrival, start, finish,
// JCT (seconds; empty when the job did not start or finish) and rescales.
func WriteJobsCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"policy", "job", "arrival_s", "start_s", "finish_s", "jct_s", "rescales", "regroup_s"}); err != nil {
		return err
	}
	num := func(v float64) string {
		if v < 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	for _, res := range results {
		for _, j := range res.Jobs {
			jct := -1.0
			if j.Finish >= 0 {
				jct = j.Finish - j.Arrival
			}
			rec := []string{res.Policy, j.JobID, num(j.Arrival), num(j.Start), num(j.Finish), num(jct), strconv.Itoa(j.Rescales), num(j.RegroupS)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteFairnessCSV writes one row per job and policy: the job's life
// (arrival to finish, seconds), its dominant share and its DRF share
// averaged over its life, their ratio (empty without a DRF share), and its
// fairness loss and shortfall (JobFairness).
func WriteFairnessCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"policy", "job", "life_s", "share", "drf_share", "ratio", "loss", "shortfall"}); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, res := range results {
		for _, f := range res.Fairness {
			ratio := ""
			if f.DRFShare > 0 {
				ratio = num(f.Ratio())
			}
			rec := []string{res.Policy, f.JobID, strconv.FormatFloat(f.Life, 'f', 1, 64), num(f.Share), num(f.DRFShare), ratio, num(f.Loss), num(f.Shortfall)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteUsageCSV writes one row per policy and change of the cluster's use:
// from time_s on, the GPUs held, the CPU and network utilisation by
// subtask jobs (sim.UsePoint), and the jobs started and not finished yet
// (running, restarting or paused).
func WriteUsageCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"policy", "time_s", "gpus", "cpu_util", "net_util", "jobs_started"}); err != nil {
		return err
	}
	for _, res := range results {
		for _, u := range res.Usage {
			n := 0
			for _, j := range res.Jobs {
				if j.Start >= 0 && j.Start <= u.Time && (j.Finish < 0 || j.Finish > u.Time) {
					n++
				}
			}
			rec := []string{res.Policy, strconv.FormatFloat(u.Time, 'f', 1, 64), strconv.Itoa(u.GPUs),
				strconv.FormatFloat(u.CPU, 'f', 4, 64), strconv.FormatFloat(u.Net, 'f', 4, 64), strconv.Itoa(n)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSpeedsCSV writes one row per policy, job and configuration a job
// of per-task ground truth (the DLRover workload) ran at: from time_s on,
// its counts, the CPU it held in MHz, and its steps per second once
// restarted (sim.SpeedPoint).
func WriteSpeedsCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"policy", "job", "time_s", "ps", "workers", "cpu_mhz", "steps_per_s"}); err != nil {
		return err
	}
	for _, res := range results {
		for _, j := range res.Jobs {
			for _, p := range j.Speeds {
				rec := []string{res.Policy, j.JobID, strconv.FormatFloat(p.Time, 'f', 1, 64), strconv.Itoa(p.PS), strconv.Itoa(p.Workers),
					strconv.Itoa(p.CPU), strconv.FormatFloat(p.StepsPerSecond, 'f', 2, 64)}
				if err := cw.Write(rec); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteAll writes summary.json, jobs.csv, fairness.csv, usage.csv,
// speeds.csv and the plots into dir.
func WriteAll(dir string, report *Report, results []*Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		file, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(file); err != nil {
			file.Close()
			return fmt.Errorf("write %s: %w", name, err)
		}
		return file.Close()
	}
	if err := write("summary.json", report.WriteJSON); err != nil {
		return err
	}
	if err := write("jobs.csv", func(w io.Writer) error { return WriteJobsCSV(w, results) }); err != nil {
		return err
	}
	if err := write("fairness.csv", func(w io.Writer) error { return WriteFairnessCSV(w, results) }); err != nil {
		return err
	}
	if err := write("usage.csv", func(w io.Writer) error { return WriteUsageCSV(w, results) }); err != nil {
		return err
	}
	if err := write("speeds.csv", func(w io.Writer) error { return WriteSpeedsCSV(w, results) }); err != nil {
		return err
	}
	return WritePlots(dir, results)
}
