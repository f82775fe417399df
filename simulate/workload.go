package simulate

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/planner/optimus"
)

// LoadWorkload reads the workload a user names to `caravan sim`:
//
//   - "parametric", "parametric:N" or "parametric:N:GAP": N (default 100)
//     parameter-server jobs after the Optimus paper, arriving every GAP
//     seconds on average (default 200);
//   - "optimus", "optimus:N" or "optimus:N:SPAN": N (default 30) jobs of
//     the Optimus paper's evaluation (Table 1's models, async or sync, with
//     Table 2's measured step times, sim.OptimusWorkload) arriving at
//     times drawn from [0, SPAN] seconds (default 12000), on its testbed of
//     13 nodes, which replaces -cluster; its parameter servers hold the
//     parameters as MXNet assigns them by default, as the paper's
//     baselines run;
//   - "optimus-paa[:N[:SPAN]]": the same jobs with their parameters
//     assigned by PAA (Optimus §5.3), as the Optimus system runs them;
//   - "harmony", "harmony:N" or "harmony:N:GAP": N (default 80) jobs of
//     the dissertation's Harmony workload (4 applications × 2 datasets ×
//     10 hyper-parameter settings, sim.HarmonyWorkload) as computation and
//     communication subtasks on m4.2xlarge nodes, all at once (GAP 0, the
//     default) or every GAP seconds on average, for harmony against
//     isolated and colocated;
//   - "cruise", "cruise:N" or "cruise:N:GAP": N (default 8) jobs of Table
//     3.4's runs of Cruise (NMF, MLR, LDA, Lasso from their initial
//     configurations on 32 machines), one every GAP seconds (default 0),
//     for cruise against fifo on -cluster 32x0;
//   - "dorm", "dorm:N" or "dorm:N:GAP": N (default 50) applications of
//     Dorm's evaluation (Table II's mix, sim.DormWorkload), one every GAP
//     seconds on average (default 1200), on its testbed of 20 servers with
//     240 cores and 5 GPUs, which replaces -cluster;
//   - "specon", "specon:N" or "specon:N:GAP": SpeCon's fixed schedule,
//     N (default 20) VAE containers one every GAP seconds (default 50),
//     on M510 workers (run on -cluster 4x0 or 8x0), sim.SpeconFixedWorkload;
//   - "specon-random", "specon-random:N" or "specon-random:N:SPAN": its
//     random schedule, N (default 20) containers of Table II's models at
//     times drawn from [0, SPAN] seconds (default 300),
//     sim.SpeconRandomWorkload;
//   - "dlrover", "dlrover:N" or "dlrover:N:GAP": N (default 10)
//     parameter-server jobs of the DLRover paper, Wide&Deep and xDeepFM
//     in turn, one every GAP seconds on average (default 600), each
//     requested at its Table 2 configuration, on 64-core 2.5 GHz nodes,
//     sim.DLRoverWorkload;
//   - "dlrover-wd", "dlrover-xdfm" (Table 1: one job requested at the
//     sampling shape) and "dlrover-wd-slow-worker", "dlrover-wd-slow-ps"
//     and the same for xdfm (§6.2: one job at Table 2 with a worker or a
//     server at 25% of its CPU); the suffix "-static" shards the data
//     statically, as the paper's TFJob baseline; "dlrover-wd-table2" and
//     "dlrover-xdfm-table2" (§6.3: one job started at Table 2's per-pod
//     CPU, for the auto-scaling baselines), sim.DLRoverExperiment;
//   - "sia/<trace>/<N>" for the Sia artifact's workloads
//     (sia/saturn/2, sia/philly/1, sia/newtrace/4; saturn and newtrace
//     2, 4, 6, 8, 10, philly 1–8) and "sia/scale/<file>" (e.g.
//     sia/scale/rate_10-workload-2, sia/scale/scale_8x-workload-2), or a
//     file under sia/workloads/: Pollux-format jobs whose truths train at
//     each GPU type's measured speed (sim.LoadSiaWorkload), for typed
//     clusters such as 6xt4,3xrtx,2xa100;
//   - "philly-tenants" or "philly-tenants:HOURS": the Philly trace's 10
//     largest virtual clusters as tenants (issue 32), their jobs of the
//     8-hour window sim.PhillyWindowStart, or of its first HOURS hours,
//     each in the namespace vc-<cluster>, on a cluster of 4-GPU nodes the
//     workload sizes for a load of about 1, which replaces -cluster
//     (sim.LoadPhillyTenants); TenantQueues gives its queues;
//   - a CSV file, on disk or in the embedded data set (for example
//     "pollux/workloads/workload-6.csv" or "pollux/traces/philly.csv"), in
//     the Pollux workload format (name,time,application,num_replicas,
//     batch_size) or the Philly trace format (timestamp,duration,num_gpus,
//     gpu_time,cluster), told apart by the header;
//   - a CSV of time,jobspec rows: Caravan jobspecs (paths relative to the
//     CSV) submitted at the given seconds. A jobspec whose meta names a
//     Pollux model as "application" trains as that model with its global
//     batch; any other trains as a parametric job.
//
// limit > 0 keeps only the first limit jobs.
func LoadWorkload(name string, seed uint64, limit int) (*sim.Workload, error) {
	generated := []struct {
		prefix string
		n      int
		gap    float64
		make   func(n int, gap float64, seed uint64) *sim.Workload
	}{
		{"parametric", 100, 200, sim.ParametricWorkload},
		{"optimus", 30, 12000, sim.OptimusWorkload},
		{"optimus-paa", 30, 12000, optimusPAAWorkload},
		{"harmony", sim.HarmonyJobs, 0, sim.HarmonyWorkload},
		{"cruise", 8, 0, sim.CruiseWorkload},
		{"dorm", sim.DormJobs, 1200, sim.DormWorkload},
		{"specon", 20, 50, sim.SpeconFixedWorkload},
		{"specon-random", 20, 300, sim.SpeconRandomWorkload},
		{"dlrover", 10, 600, sim.DLRoverWorkload},
	}
	if wl, ok := sim.DLRoverExperiment(name); ok {
		return trim(wl, limit), nil
	}
	if rest, ok := strings.CutPrefix(name, PhillyTenantsWorkload); ok && (rest == "" || rest[0] == ':') {
		return loadPhillyTenants(name, strings.TrimPrefix(rest, ":"), limit)
	}
	if file, ok := sim.SiaWorkloadFile(name); ok {
		return loadSia(name, file, limit)
	}
	for _, g := range generated {
		rest, ok := strings.CutPrefix(name, g.prefix)
		if !ok || rest != "" && rest[0] != ':' {
			continue
		}
		n, gap := g.n, g.gap
		parts := strings.Split(strings.TrimPrefix(rest, ":"), ":")
		var err error
		if parts[0] != "" {
			if n, err = strconv.Atoi(parts[0]); err != nil || n < 1 {
				return nil, fmt.Errorf("workload %q: job count %q is not a positive number", name, parts[0])
			}
		}
		if len(parts) > 1 {
			if gap, err = strconv.ParseFloat(parts[1], 64); err != nil || !(gap >= 0) || math.IsInf(gap, 1) || gap == 0 && g.gap != 0 {
				return nil, fmt.Errorf("workload %q: gap %q is not a positive number of seconds", name, parts[1])
			}
		}
		return trim(g.make(n, gap, seed), limit), nil
	}
	fsys, file := sim.OpenFile(name)
	header, err := firstLine(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, unknownWorkload(name)
	} else if err != nil {
		return nil, fmt.Errorf("workload %q: %w", name, err)
	}
	profiles, err := sim.PolluxProfiles()
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(header, "name,time,application"):
		wl, err := sim.LoadPolluxWorkload(fsys, file, profiles)
		if err != nil {
			return nil, err
		}
		return trim(wl, limit), nil
	case strings.HasPrefix(header, "timestamp,duration,num_gpus"):
		return sim.LoadPhilly(fsys, file, profiles, limit)
	case strings.HasPrefix(header, "time,jobspec"):
		return loadJobspecs(fsys, file, profiles, seed, limit)
	}
	return nil, fmt.Errorf("workload %q: unknown CSV header %q; see caravan sim -h", name, header)
}

// PhillyTenantsWorkload names the Philly tenants workload to LoadWorkload.
const PhillyTenantsWorkload = "philly-tenants"

// loadPhillyTenants loads the Philly tenants workload of the first hours
// of its window ("" for all of it).
func loadPhillyTenants(name, hours string, limit int) (*sim.Workload, error) {
	h := float64(sim.PhillyWindowHours)
	if hours != "" {
		var err error
		if h, err = strconv.ParseFloat(hours, 64); err != nil || !(h > 0) || h > sim.PhillyWindowHours {
			return nil, fmt.Errorf("workload %q: hours %q is not a number of hours in (0, %d]", name, hours, sim.PhillyWindowHours)
		}
	}
	profiles, err := sim.PolluxProfiles()
	if err != nil {
		return nil, err
	}
	wl, err := sim.LoadPhillyTenants(sim.Data, "pollux/traces/philly.csv", profiles, sim.PhillyWindowStart, h)
	if err != nil {
		return nil, fmt.Errorf("workload %q: %w", name, err)
	}
	return trim(wl, limit), nil
}

// loadSia loads the Sia workload in file of the embedded data.
func loadSia(name, file string, limit int) (*sim.Workload, error) {
	profiles, err := sim.PolluxProfiles()
	if err != nil {
		return nil, err
	}
	types, err := sim.SiaProfiles()
	if err != nil {
		return nil, err
	}
	wl, err := sim.LoadSiaWorkload(sim.Data, file, profiles, types)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (%s is not in the embedded data)", unknownWorkload(name), file)
	} else if err != nil {
		return nil, fmt.Errorf("workload %q: %w", name, err)
	}
	return trim(wl, limit), nil
}

func trim(wl *sim.Workload, limit int) *sim.Workload {
	if limit > 0 && len(wl.Arrivals) > limit {
		wl.Arrivals = wl.Arrivals[:limit]
	}
	return wl
}

func firstLine(fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func loadJobspecs(fsys fs.FS, file string, profiles map[string]*sim.Profile, seed uint64, limit int) (*sim.Workload, error) {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	wl := &sim.Workload{Name: strings.TrimSuffix(path.Base(file), ".csv")}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		at, spec, ok := strings.Cut(strings.TrimSpace(line), ",")
		t, err := strconv.ParseFloat(at, 64)
		if !ok || err != nil || !(t >= 0) || math.IsInf(t, 1) {
			return nil, fmt.Errorf("%s:%d: want time,jobspec, the time a number of seconds from 0", file, i+2)
		}
		src, err := fs.ReadFile(fsys, path.Join(path.Dir(file), spec))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+2, err)
		}
		job, diags := jobspec.Parse(&jobspec.Config{Filename: spec, Src: src})
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s:%d: %s", file, i+2, diags.Error())
		}
		// A jobspec names no request: the fixed policies run it at its
		// elastic maximum, as planner.Job.FixedRequest does.
		a := sim.Arrival{Time: t, Job: job, RequestWorkers: job.Elastic.Workers.Max}
		if job.Elastic.ParameterServers != nil {
			a.RequestPS = job.Elastic.ParameterServers.Max
		}
		a.Truth = sim.TruthFor(job, profiles, seed)
		wl.Arrivals = append(wl.Arrivals, a)
	}
	slices.SortStableFunc(wl.Arrivals, func(a, b sim.Arrival) int { return cmp.Compare(a.Time, b.Time) })
	return trim(wl, limit), nil
}

// optimusPAAWorkload is sim.OptimusWorkload with every job's parameters
// assigned by PAA (Optimus §5.3, optimus.AssignParameters), as the Optimus
// system runs them; the truth turns the loads PAA gives into step time.
func optimusPAAWorkload(n int, span float64, seed uint64) *sim.Workload {
	return sim.OptimusWorkloadAssigned(n, span, seed, "optimus-paa", PAALoads)
}

// PAALoads is a sim.Assignment by PAA at the paper's 1% (§6.1).
func PAALoads(blocks []sim.ParamBlock, servers int) []int64 {
	in := make([]optimus.Block, len(blocks))
	for i, b := range blocks {
		in[i] = optimus.Block{Name: b.Name, Size: b.Size}
	}
	loads := make([]int64, servers)
	for s, slices := range optimus.AssignParameters(in, servers, optimus.DefaultSmallFraction) {
		for _, sl := range slices {
			loads[s] += sl.Size
		}
	}
	return loads
}
