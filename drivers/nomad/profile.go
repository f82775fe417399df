package nomad

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// Profiling runs: Sia's bootstrap (§3.1) on Nomad. ProfileTypes submits,
// for each GPU model of the cluster, a Nomad batch job that runs the
// job's worker once on one GPU of that model, at the per-GPU batches the
// job may train at, smallest first; the worker reports each batch's step
// time as a Profile sample naming its GPU type (the task contract's
// CARAVAN_PROFILE_BATCHES and CARAVAN_PROFILE_STEPS, examples/trainer)
// and exits, stopping at the first batch its GPU's memory does not hold.
// The job meanwhile waits, unplaced, for its first model of a type
// (TypeProfileHold), so that it never starts on a GPU its batch does not
// fit. Enact purges the runs that ended, and those of jobs the plan no
// longer names, from the view of Nomad's jobs: any leader does.
const (
	// metaProfileOf names the Caravan job a profiling run measures, and
	// metaProfileType the GPU model it runs on. A profiling run has no
	// metaJobID: it is no Nomad job of the job's.
	metaProfileOf   = "caravan_profile_of"
	metaProfileType = "caravan_profile_gpu_type"

	// ProfileBatchesEnv and ProfileStepsEnv are what a profiling run's
	// worker gets: the per-GPU batches to time, comma-separated and
	// ascending, and the steps to time at each after a first one.
	ProfileBatchesEnv = "CARAVAN_PROFILE_BATCHES"
	ProfileStepsEnv   = "CARAVAN_PROFILE_STEPS"

	// maxProfileBatches is the most batches a run times (Sia §3.1: about
	// ten), and profileSteps the steps at each.
	maxProfileBatches = 10
	profileSteps      = 3
)

// profileRun is a profiling run Nomad holds: its Nomad job, the job it
// measures, and whether it ended.
type profileRun struct {
	id   namespacedID
	key  structs.JobKey
	dead bool
}

// profileRuns finds the profiling runs among Nomad's jobs.
func profileRuns(stubs []*api.JobListStub) []profileRun {
	var out []profileRun
	for _, s := range stubs {
		if of := s.Meta[metaProfileOf]; of != "" {
			out = append(out, profileRun{
				id:   namespacedID{Namespace: s.Namespace, ID: s.ID},
				key:  structs.NewJobKey(s.Meta[metaNamespace], of),
				dead: s.Stop || s.Status == jobStatusDead,
			})
		}
	}
	return out
}

// profilesToPurge returns the profiling runs to purge, once each: those
// that ended (their samples are in), and those of jobs planned does not
// name (stopped, completed, or gone before their runs could start). A
// job the plan holds while it waits for its runs is named, paused. Call
// it with d.mu held.
func (d *Driver) profilesToPurge(runs []profileRun, planned map[structs.JobKey]bool) []profileRun {
	listed := map[namespacedID]bool{}
	var out []profileRun
	for _, r := range runs {
		listed[r.id] = true
		if (r.dead || !planned[r.key]) && !d.purging[r.id] {
			d.purging[r.id] = true
			out = append(out, r)
		}
	}
	for id := range d.purging {
		if !listed[id] {
			delete(d.purging, id)
		}
	}
	return out
}

// purgeProfile purges a profiling run from Nomad; it runs on its job's
// worker. A run Nomad could not purge is tried again at a later Enact.
func (d *Driver) purgeProfile(ctx context.Context, id namespacedID) {
	cctx, cancel := d.callContext(ctx)
	defer cancel()
	if _, _, err := d.client.Jobs().Deregister(id.ID, true, (&api.WriteOptions{Namespace: id.Namespace}).WithContext(cctx)); err != nil && !isNotFound(err) {
		d.log.Warn("cannot purge a profiling run", "nomad_job", id.ID, "error", err)
		d.mu.Lock()
		delete(d.purging, id)
		d.mu.Unlock()
		return
	}
	d.log.Debug("purged a profiling run", "nomad_job", id.ID)
}

// TypeProfileHold is how long job waits for its first GPU-type model
// (server.TypeProfileHolder): Config.TypeProfileHold when ProfileTypes
// profiles it, else 0.
func (d *Driver) TypeProfileHold(job *structs.Job) time.Duration {
	if len(d.profileTargets(job)) == 0 {
		return 0
	}
	return d.cfg.TypeProfileHold
}

// profileTarget is a GPU model to profile on, and a node of it.
type profileTarget struct {
	node string
	gpu  structs.DeviceID
}

// profileTargets are the GPU models of the cluster's schedulable nodes,
// as the node list last read them, that the job's GPU request may be
// narrowed to (pinModel), each with its first node. None when the runs
// are off (Config.NoTypeProfiles), for a job declared in Nomad (its
// groups are the user's, with whatever volumes, ports and services they
// hold), for one whose workers ask for no GPU or name its model, and for
// one that gives no batch.
func (d *Driver) profileTargets(job *structs.Job) []profileTarget {
	if d.cfg.NoTypeProfiles || job.Nomad != nil || !asksGPU(job) || len(ProfileBatches(job)) == 0 {
		return nil
	}
	d.mu.Lock()
	nodes := d.nodes
	d.mu.Unlock()
	var out []profileTarget
	for _, n := range nodes {
		gpu, ok := gpuDevice(n)
		if !ok || !n.Schedulable() || slices.ContainsFunc(out, func(t profileTarget) bool { return t.gpu == gpu }) {
			continue
		}
		reqs := []*api.RequestedDevice{}
		for _, r := range job.Worker.Resources.Devices {
			reqs = append(reqs, &api.RequestedDevice{Name: r.Name})
		}
		pinModel(reqs, gpu)
		if slices.ContainsFunc(reqs, func(r *api.RequestedDevice) bool { return r.Name == gpu.String() }) {
			out = append(out, profileTarget{node: n.ID, gpu: gpu})
		}
	}
	return out
}

// ProfileTypes submits a profiling run of job on each GPU model of the
// cluster (profileTargets). The submissions run on the job's worker:
// nothing here calls Nomad. A run whose GPUs are all taken waits in Nomad
// until one frees; the runs of a job that stops are stopped with it.
func (d *Driver) ProfileTypes(ctx context.Context, job *structs.Job) error {
	batches := ProfileBatches(job)
	key := job.Key()
	for _, target := range d.profileTargets(job) {
		gpu := target.gpu
		nj, err := profileJob(job, target.node, gpu, batches, d.submission(job, target.node, gpu))
		if err != nil {
			return fmt.Errorf("profile job %q on %s: %w", job.ID, gpu.Name, err)
		}
		id := namespacedID{Namespace: deref(nj.Namespace), ID: *nj.ID}
		d.enqueue(key, func(ctx context.Context) {
			cctx, cancel := d.callContext(ctx)
			defer cancel()
			if _, _, err := d.client.Jobs().Register(nj, (&api.WriteOptions{Namespace: id.Namespace}).WithContext(cctx)); err != nil {
				d.log.Warn("cannot submit a profiling run", "job_id", job.ID, "gpu_type", gpu.Name, "error", err)
				return
			}
			d.event(ctx, job, structs.EventJobProfiling, fmt.Sprintf("Profiling on one %s at per-GPU batches %s (Nomad job %s)", gpu.Name, formatInts(batches), id.ID),
				map[string]string{"gpu_type": gpu.Name, "nomad_job": id.ID})
		})
	}
	return nil
}

// submission is what Translate needs for a run of job on node, whose GPU
// is gpu. The run reports to the servers, with no collector sidecar: it
// ends within seconds, and a collector that ends with it may not have
// been scraped yet.
func (d *Driver) submission(job *structs.Job, node string, gpu structs.DeviceID) Submission {
	return Submission{
		Namespace: d.cfg.Namespace, CheckpointDir: d.cfg.CheckpointDir, ReportAddrs: d.cfg.ReportAddrs,
		ReportToken: d.reportToken(job.Key()), Generation: 1,
		GPUs:      map[string]structs.DeviceID{node: gpu},
		NodeAddrs: d.nodeAddrs(&structs.Placement{Nodes: []*structs.NodeTasks{{NodeID: node}}}),
	}
}

// profileJob is the Nomad job of a profiling run of job on one GPU of
// model gpu: the job's worker group as Translate makes it for one worker
// on node, a node of that model, with one GPU of the model and any node
// of it (Nomad picks the one with a GPU free), told to profile batches,
// with a checkpoint directory of its own in its task directory, so that
// nothing it writes can touch the job's checkpoints. Its ID,
// `caravan-profile~<Nomad job ID>~<model>`, has more than one '~' and so
// is never the ID of a job's own Nomad job (NomadJobID).
func profileJob(job *structs.Job, node string, gpu structs.DeviceID, batches []int, sub Submission) (*api.Job, error) {
	var ps int
	if e := job.Elastic; e != nil && e.ParameterServers != nil {
		ps = max(e.ParameterServers.Min, 1)
	} else if job.ParameterServer != nil {
		ps = 1
	}
	p := &structs.Placement{Namespace: job.Namespace, JobID: job.ID, NumPS: ps, NumWorkers: 1,
		Nodes: []*structs.NodeTasks{{NodeID: node, Workers: 1}}}
	nj, err := Translate(job, p, sub)
	if err != nil {
		return nil, err
	}
	var worker *api.TaskGroup
	for _, tg := range nj.TaskGroups {
		if tg.Meta[metaGroupRole] == structs.RoleWorker {
			worker = tg
			break
		}
	}
	if worker == nil {
		return nil, fmt.Errorf("no worker group")
	}
	id := JobPrefix + "profile" + namespaceSeparator + NomadJobID(job, sub.Namespace) + namespaceSeparator + idElement(gpu.Name)
	nj.ID, nj.Name = &id, &id
	nj.Type = new(api.JobTypeBatch)
	nj.Meta = map[string]string{metaProfileOf: job.ID, metaNamespace: job.Namespace, metaProfileType: gpu.Name}
	worker.Name, worker.Count = new("profile"), new(1)
	worker.Meta = nil
	worker.Constraints = slices.DeleteFunc(worker.Constraints, func(c *api.Constraint) bool { return c.LTarget == "${node.unique.id}" })
	worker.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail")}
	for _, t := range worker.Tasks {
		maps.Copy(t.Env, map[string]string{
			ProfileBatchesEnv: formatInts(batches), ProfileStepsEnv: strconv.Itoa(profileSteps),
			"CARAVAN_CHECKPOINT_DIR": "${NOMAD_TASK_DIR}/caravan-profile",
		})
		if t.Resources != nil {
			for _, r := range t.Resources.Devices {
				if r.Name == gpu.String() {
					r.Count = new(uint64(1))
				}
			}
		}
	}
	nj.TaskGroups = []*api.TaskGroup{worker}
	return nj, nil
}

// asksGPU reports whether job's workers ask for GPUs.
func asksGPU(job *structs.Job) bool {
	if job.Worker == nil || job.Worker.Resources == nil {
		return false
	}
	return slices.ContainsFunc(job.Worker.Resources.Devices, func(d *structs.RequestedDevice) bool {
		id, err := structs.ParseDeviceID(d.Name)
		return err == nil && id.Type == "gpu"
	})
}

// ProfileBatches returns the per-GPU batches a profiling run of job times,
// ascending, at most maxProfileBatches of them spread evenly: for a job
// with batch bounds (adaptive), the powers of two from its smallest local
// batch to its largest, and both ends; for a fixed global batch in sync
// mode, that batch split over each worker count the job may run at; in
// async mode, the one batch every worker steps on. None for a job that
// gives no batch.
func ProfileBatches(job *structs.Job) []int {
	t := job.Training
	if t == nil {
		return nil
	}
	var out []int
	switch {
	case t.BatchSize != nil:
		lo, hi := t.BatchSize.LocalBounds()
		for b := lo; b < hi; b *= 2 {
			out = append(out, b)
		}
		out = append(out, hi)
	case t.GlobalBatchSize <= 0:
		return nil
	case t.Mode == structs.ModeAsync:
		out = []int{t.GlobalBatchSize}
	case job.Elastic == nil:
		out = []int{t.GlobalBatchSize}
	default:
		w := job.Elastic.Workers
		for n := w.Min; n <= w.Max; n++ {
			out = append(out, max(t.GlobalBatchSize/n, 1))
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) <= maxProfileBatches {
		return out
	}
	spread := make([]int, maxProfileBatches)
	for i := range spread {
		spread[i] = out[i*(len(out)-1)/(maxProfileBatches-1)]
	}
	return slices.Compact(spread)
}

// idElement is name with every byte outside [A-Za-z0-9_.-] replaced by
// '-': Nomad refuses spaces in job IDs, and GPU models have them.
func idElement(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, name)
}

func formatInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
