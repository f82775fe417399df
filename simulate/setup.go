package simulate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/structs"
)

// Setup is one comparison, as `caravan sim` takes it on its command
// line: a workload on a cluster under policies.
type Setup struct {
	// Workload names it as LoadWorkload reads it.
	Workload string
	// Cluster is NODESxGPUS or groups of GPU types such as
	// 6xt4,3xrtx,2xa100 (sim.ParseCluster); "" means the assumptions'
	// cluster (AssumedClusters), else DefaultCluster. A workload with its
	// own testbed replaces it.
	Cluster string
	// Policies are ParsePolicy's strings.
	Policies []string
	Seed     uint64
	// Interval and RestartPenalty are the scheduling rounds' period and
	// the progress a restart costs; Assume may override them.
	Interval, RestartPenalty time.Duration
	// Limit > 0 keeps only the first Limit jobs.
	Limit int
	// Assume names the simulator's assumptions (Assumptions).
	Assume string
	// Stragglers turns on straggler handling for every policy.
	Stragglers bool
	// Queues are stored in every run's server before any job
	// (Options.Queues); nil for none.
	Queues []*structs.Queue
}

// DefaultCluster is the cluster of a Setup that names none and whose
// assumptions bring none: 16 nodes of 4 GPUs, the Pollux testbed's shape.
const DefaultCluster = "16x4"

// Prepared is a Setup parsed and loaded, ready for RunPolicies.
type Prepared struct {
	Workload *sim.Workload
	Specs    []PolicySpec
	Options  Options
	// Cluster describes the cluster the runs use.
	Cluster string
	// Warnings say which policies plan from what the workload lacks
	// (Fit).
	Warnings []string
}

// TotalGPUs is the GPUs of the runs' cluster: the workload's testbed's
// where it has one.
func (p *Prepared) TotalGPUs() int {
	c := p.Options.Cluster
	if p.Workload.NodeGPUs != nil {
		c.NodeGPUs, c.NodeModels = p.Workload.NodeGPUs, nil
	}
	return c.TotalGPUs()
}

// Prepare parses s's policies, checking their options, loads its
// workload and sets the runs' options.
func Prepare(s Setup) (*Prepared, error) {
	if s.Cluster == "" {
		s.Cluster = cmp.Or(AssumedClusters[s.Assume], DefaultCluster)
	}
	cluster, err := sim.ParseCluster(s.Cluster)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Cluster: cluster.String()}
	var algs []planner.Algorithm // each spec's, under its options
	for _, str := range s.Policies {
		spec, err := ParsePolicy(str)
		if err != nil {
			return nil, err
		}
		alg, ok := Policy(spec.Name)
		if !ok {
			return nil, fmt.Errorf("unknown policy %q; the policies are %s and %s", spec.Name, strings.Join(builtin.Names(), ", "), strings.Join(slices.Sorted(maps.Keys(Baselines)), ", "))
		}
		// Configured even without options, as the server's loader does,
		// so that an algorithm missing what it needs (dorm without
		// glpsol) fails here rather than in the run's server.
		conf, ok := alg.(planner.Configurable)
		if spec.Options != nil && !ok {
			return nil, fmt.Errorf("policy %q takes no options", spec.Name)
		}
		if ok {
			if err := conf.SetConfig(spec.Options); err != nil && spec.Options == nil {
				return nil, fmt.Errorf("policy %q: %w", spec.Name, err)
			} else if err != nil {
				return nil, fmt.Errorf("options of policy %q: %w", spec.Name, err)
			}
		}
		p.Specs = append(p.Specs, spec)
		algs = append(algs, alg)
	}
	if p.Workload, err = LoadWorkload(s.Workload, s.Seed, s.Limit); err != nil {
		return nil, fmt.Errorf("loading the workload: %w", err)
	}
	cfg := sim.DefaultConfig()
	cluster.Apply(&cfg)
	cfg.Seed, cfg.RestartPenalty = s.Seed, s.RestartPenalty
	if p.Workload.NodeGPUs != nil {
		// The workload's testbed replaces the cluster (Run).
		c := cfg
		c.NodeGPUs, c.NodeModels = p.Workload.NodeGPUs, nil
		p.Cluster = fmt.Sprintf("%d nodes, %d GPUs", c.NodeCount(), c.TotalGPUs())
	}
	p.Options = Options{Cluster: cfg, Interval: s.Interval, Queues: s.Queues}
	if s.Stragglers {
		p.Options.Stragglers = &straggler.Config{}
	}
	if err := Assume(s.Assume, &p.Options, p.Workload); err != nil {
		return nil, err
	}
	for i, spec := range p.Specs {
		if w := Fit(algs[i], p.Workload); w != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("policy %s does not fit workload %s: %s", spec.Name, s.Workload, w))
		}
	}
	return p, nil
}
