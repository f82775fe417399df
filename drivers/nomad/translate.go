package nomad

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// Nomad job metadata that links a Nomad job back to its Caravan job and
// records what the driver submitted, so that any leader can adopt it.
const (
	metaJobID      = "caravan_job_id"
	metaNamespace  = "caravan_namespace"
	metaGeneration = "caravan_generation"
	// metaPlacement is the fingerprint of the placement and job version
	// the Nomad job runs; equal fingerprints mean nothing to change.
	metaPlacement = "caravan_placement"
	metaPlanIndex = "caravan_plan_index"
	// metaBatch is the batch the tasks were started with when the
	// placement set one (Placement.Batch), as formatBatch writes it.
	metaBatch = "caravan_batch"
)

// What Caravan tells the people who read a Nomad job it runs: the shape
// it runs at and why.
const (
	metaShape  = "caravan_shape"
	metaReason = "caravan_reason"
)

// JobPrefix starts the ID of every Nomad job Caravan submits for a job
// submitted to Caravan; a job declared in Nomad keeps its own ID.
const JobPrefix = "caravan-"

// namespaceSeparator ends the Caravan namespace in the ID of a Nomad job
// that shares its Nomad namespace with the jobs of other Caravan
// namespaces: `caravan-<namespace>~<id>`. It is '~' because it can occur
// in neither half: a namespace is letters, digits and dashes, an ID
// letters, digits, '_', '.' and '-' (structs.Job.Validate). So such an ID
// has exactly one '~', which splits it back into its namespace and ID,
// and no `caravan-<id>` has one. It is also the one character outside
// those that URLs leave unescaped, and Nomad allows it in job IDs (it
// refuses only spaces and NULs); '/' would split API paths, and ':'
// separates the fields of Nomad's workload identities.
const namespaceSeparator = "~"

// NomadJobID returns the ID of the Nomad job that runs a Caravan job in
// the Nomad namespace nomadNamespace (Submission.Namespace: empty means
// the job's own). A Caravan job's ID is unique within its namespace only,
// so the Nomad job's ID must be unique within the Nomad namespace:
//
//   - In its own Nomad namespace, which holds the jobs of its Caravan
//     namespace alone, it is `caravan-<id>`.
//   - In a Nomad namespace shared by every Caravan namespace (the nomad
//     driver's `nomad.namespace`), a job of the default namespace is
//     `caravan-<id>` and any other `caravan-<namespace>~<id>`
//     (namespaceSeparator).
//
// The Nomad jobs that Caravan jobs of the default namespace, and every
// Caravan job without `nomad.namespace`, ran under before namespaces were
// part of the name thus keep their IDs, and are adopted after an upgrade.
// A job declared in Nomad keeps its own ID.
func NomadJobID(job *structs.Job, nomadNamespace string) string {
	if job.Nomad != nil {
		return job.ID
	}
	ns := cmp.Or(job.Namespace, structs.DefaultNamespace)
	if nomadNamespace == "" || ns == structs.DefaultNamespace {
		return JobPrefix + job.ID
	}
	return JobPrefix + ns + namespaceSeparator + job.ID
}

// Submission is what Translate needs besides the job and its placement.
type Submission struct {
	// Namespace is the Nomad namespace; empty means the job's own.
	Namespace string
	// CheckpointDir is the root under which each job checkpoints, in
	// <root>/<namespace>/<job ID>; it must be shared by the nodes.
	CheckpointDir string
	// ReportAddrs are the addresses trainers report samples to
	// (CARAVAN_COLLECTOR_ADDR, comma-separated).
	ReportAddrs []string
	// ReportToken, when set, is given to tasks as CARAVAN_TOKEN: the
	// secret of an ACL token that may report samples.
	ReportToken string
	// Generation numbers the job's submissions from 1; tasks of a later
	// generation resume from the job's checkpoint.
	Generation int
	// PlanIndex is the plan being enacted, for people reading the job.
	PlanIndex uint64
	// Collector, when set, adds a metrics collector sidecar to every group;
	// tasks report to it first.
	Collector *Sidecar
	// CoordinatorAddr, when set, is the node-local subtask coordinator
	// tasks ask before their computation and communication phases
	// (CARAVAN_COORDINATOR_ADDR).
	CoordinatorAddr string
	// GPUs is the GPU device group of each placed node that has one, by
	// node ID: the group whose name is the node's GPU type
	// (structs.Node.GPUType, see gpuDevice). A GPU request of a group on
	// such a node names that model (pinModel); on a node missing here the
	// requests stay as the job wrote them. nil pins no model.
	GPUs map[string]structs.DeviceID
	// NodeAddrs is the address of each placed node (its Nomad attribute
	// unique.network.ip-address), by node ID. A torchrun job's rendezvous
	// is on its rank 0's node, which must be here.
	NodeAddrs map[string]string
}

// Sidecar is the `caravan collector` task the driver adds to each group
// (a prestart sidecar, on a dynamic port "collector"): the group's tasks
// report to it, it registers in Consul with the job's tags, and the
// leader scrapes it.
type Sidecar struct {
	// Command is the caravan binary on the Nomad clients.
	Command string
	// Driver runs it; default "raw_exec".
	Driver string
	// ConsulAddr is the Consul agent the collector registers with, as the
	// clients reach it; empty means the collector's default
	// (CONSUL_HTTP_ADDR, else 127.0.0.1:8500).
	ConsulAddr string
	// CPU (MHz) and MemoryMB it reserves; default 50 and 64.
	CPU      int
	MemoryMB int
}

// add adds the collector task, and its port, to a role's group; a nil
// Sidecar adds nothing.
func (sc *Sidecar) add(tg *api.TaskGroup, job *structs.Job, role string) {
	if sc == nil {
		return
	}
	port := api.Port{Label: "collector"}
	if len(tg.Networks) > 0 { // Nomad allows one network per group
		tg.Networks[0].DynamicPorts = append(tg.Networks[0].DynamicPorts, port)
	} else {
		tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{port}}}
	}
	tg.Tasks = append(tg.Tasks, sc.task(job, role))
}

// collectorTask names the collector sidecar task of every group.
const collectorTask = "collector"

// task is the collector task of a role's group.
func (sc *Sidecar) task(job *structs.Job, role string) *api.Task {
	args := []string{"collector", "-bind", "${NOMAD_IP_collector}", "-port", "${NOMAD_PORT_collector}",
		"-job", job.ID, "-namespace", job.Namespace, "-role", role}
	if sc.ConsulAddr != "" {
		args = append(args, "-consul-addr", sc.ConsulAddr)
	}
	return &api.Task{
		Name:      collectorTask,
		Driver:    cmp.Or(sc.Driver, "raw_exec"),
		Config:    map[string]any{"command": sc.Command, "args": args},
		Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart, Sidecar: true},
		Resources: &api.Resources{CPU: new(cmp.Or(sc.CPU, 50)), MemoryMB: new(cmp.Or(sc.MemoryMB, 64))},
		// It deregisters from Consul on SIGINT.
		KillSignal: "SIGINT",
	}
}

// Restart and reschedule policies of every group. Nomad restarts a failed
// task in place a few times; it never moves it to another node, because
// placement is Caravan's: a group that keeps failing is reported to the
// leader, which plans the job again.
const (
	restartAttempts = 2
	restartDelay    = 5 * time.Second
	restartInterval = 10 * time.Minute
)

// Fingerprint identifies what a Nomad job of the job runs: the job's
// version and its per-node task counts, and the sizes of the entries that
// set any (so that unsized placements keep the fingerprints they had
// before sizes existed). Enacting a placement with the fingerprint the
// Nomad job carries changes nothing.
func Fingerprint(job *structs.Job, p *structs.Placement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d", job.Version)
	for _, n := range p.Nodes {
		fmt.Fprintf(&b, ";%s:%d:%d", n.NodeID, n.PS, n.Workers)
		if n.Sized() {
			fmt.Fprintf(&b, ":%s:%s", formatSize(n.PSSize), formatSize(n.WorkerSize))
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Translate returns the Nomad job that runs job as placed: a batch job
// NomadJobID names (`caravan-<id>`, or `caravan-<namespace>~<id>` in a
// shared Nomad namespace) with one task group per role and placement entry,
// `ps-<node ID>` and `worker-<node ID>` (`…-<k>` for the k-th sized entry
// of a node, from 1), whose count is the role's task count there and
// which a ${node.unique.id} constraint pins to that node. Each task is the
// role template (driver, config, env, resources with device requests,
// constraints and affinities) at the entry's size, plus the environment
// of DESIGN.md §3. The group's meta names its role, node and entry sizes
// (groupMeta), which is how Status reads back what runs.
//
// On a node of a GPU type (sub.GPUs), a GPU request that does not name a
// model is narrowed to the node's, `nvidia/gpu` becoming
// `nvidia/gpu/<model>` (pinModel), so that Nomad's device scheduler can
// give the tasks no other model than the one Caravan planned them on. The
// rule is per group: every group is pinned to one node, so a placement
// that spans GPU types gets groups of each of its nodes' models, and
// nothing here refuses it; keeping a job on one type (Sia §3.2) is the
// planner's. A request that names a model already, or asks for devices of
// another type, is left as written, with its constraints and affinities.
//
// A job declared in Nomad (job.Nomad set) is translated by
// translateDeclared instead.
func Translate(job *structs.Job, p *structs.Placement, sub Submission) (*api.Job, error) {
	if job.Nomad != nil {
		return translateDeclared(job, p, sub)
	}
	ns := sub.Namespace
	if ns == "" {
		ns = job.Namespace
	}
	id := NomadJobID(job, sub.Namespace)
	nj := &api.Job{
		ID:          &id,
		Name:        &id,
		Namespace:   &ns,
		Type:        new(api.JobTypeBatch),
		Datacenters: job.Datacenters,
		Priority:    new(job.Priority),
		Meta:        caravanMeta(job.Meta, job, p, sub),
		Constraints: constraints(job.Constraints),
		Affinities:  affinities(job.Affinities),
	}
	if job.Region != "" {
		nj.Region = new(job.Region)
	}
	if job.NodePool != "" {
		nj.NodePool = new(job.NodePool)
	}
	env := contractEnv(job, p, sub)
	rdzv, err := torchrunRendezvous(job, p, sub)
	if err != nil {
		return nil, err
	}
	for _, role := range []string{structs.RolePS, structs.RoleWorker} {
		tmpl, roleEnv := job.Worker, rdzv.roleEnv(role)
		if role == structs.RolePS && job.ParameterServer != nil {
			tmpl = job.ParameterServer
		}
		base := 0
		for k, n := range p.Nodes {
			count, size := roleOf(n, role)
			if count == 0 {
				continue
			}
			for _, pt := range rdzv.parts(role, count, base) {
				t := task(role, tmpl, size, pt.base, env, roleEnv, checkpointTimeout(job))
				pinModel(t.Resources.Devices, sub.GPUs[n.NodeID])
				tg := group(partName(groupName(role, p, k), pt), n.NodeID, pt.count, t)
				tg.Meta = groupMeta(role, n, pt.base)
				if pt.rdzv {
					rdzv.reserve(tg)
				}
				sub.Collector.add(tg, job, role)
				nj.TaskGroups = append(nj.TaskGroups, tg)
			}
			base += count
		}
	}
	return nj, nil
}

// Group metadata: what a group of a Caravan-submitted job runs.
const (
	metaGroupRole       = "caravan_role"
	metaGroupNode       = "caravan_node"
	metaGroupPSSize     = "caravan_ps_size"
	metaGroupWorkerSize = "caravan_worker_size"
	// metaGroupRankBase is the rank of the group's first allocation:
	// allocation i runs rank base+i of its role.
	metaGroupRankBase = "caravan_rank_base"
)

// roleOf returns how many tasks of role the entry runs, and at which size.
func roleOf(n *structs.NodeTasks, role string) (int, structs.TaskSize) {
	if role == structs.RolePS {
		return n.PS, n.PSSize
	}
	return n.Workers, n.WorkerSize
}

// groupName names the group of role for entry k of p: `<role>-<node>`
// when the entry is unsized, `<role>-<node>-<i>` for the i-th sized entry
// of its node.
func groupName(role string, p *structs.Placement, k int) string {
	n := p.Nodes[k]
	name := role + "-" + n.NodeID
	if !n.Sized() {
		return name
	}
	i := 0
	for _, o := range p.Nodes[:k+1] {
		if o.NodeID == n.NodeID && o.Sized() {
			i++
		}
	}
	return name + "-" + strconv.Itoa(i)
}

// groupMeta is the metadata of entry n's group of role: the role, the
// node, the rank of its first task and, when the entry is sized, both of
// its sizes, so that the entry's tasks of both roles are read back as one
// entry.
func groupMeta(role string, n *structs.NodeTasks, rankBase int) map[string]string {
	m := map[string]string{metaGroupRole: role, metaGroupNode: n.NodeID, metaGroupRankBase: strconv.Itoa(rankBase)}
	if n.Sized() {
		m[metaGroupPSSize] = formatSize(n.PSSize)
		m[metaGroupWorkerSize] = formatSize(n.WorkerSize)
	}
	return m
}

// formatSize writes a size as "<cpu>/<memory>", 0 for a field not set.
func formatSize(s structs.TaskSize) string {
	return strconv.Itoa(s.CPU) + "/" + strconv.Itoa(s.MemoryMB)
}

// parseSize reads formatSize's form; ok is false when s is not one.
func parseSize(s string) (structs.TaskSize, bool) {
	cpu, mem, found := strings.Cut(s, "/")
	c, err1 := strconv.Atoi(cpu)
	m, err2 := strconv.Atoi(mem)
	if !found || err1 != nil || err2 != nil || c < 0 || m < 0 {
		return structs.TaskSize{}, false
	}
	return structs.TaskSize{CPU: c, MemoryMB: m}, true
}

// caravanMeta returns the metadata of a Nomad job Caravan submits: the
// job's own, and what links it to its Caravan job and placement.
func caravanMeta(own map[string]string, job *structs.Job, p *structs.Placement, sub Submission) map[string]string {
	meta := maps.Clone(own)
	if meta == nil {
		meta = map[string]string{}
	}
	maps.Copy(meta, map[string]string{
		metaJobID:      job.ID,
		metaNamespace:  job.Namespace,
		metaGeneration: strconv.Itoa(sub.Generation),
		metaPlacement:  Fingerprint(job, p),
		metaPlanIndex:  strconv.FormatUint(sub.PlanIndex, 10),
		metaShape:      shape(p),
	})
	if p.Reason != "" {
		meta[metaReason] = p.Reason
	}
	delete(meta, metaBatch)
	if p.Batch != nil {
		meta[metaBatch] = formatBatch(p.Batch)
	}
	return meta
}

// formatBatch writes a batch as "<global>/<local>/<accumulation steps>".
func formatBatch(b *structs.Batch) string {
	return fmt.Sprintf("%d/%d/%d", b.Global, b.Local, b.AccumSteps)
}

// parseBatch reads formatBatch's form; nil when s is not one.
func parseBatch(s string) *structs.Batch {
	var b structs.Batch
	if n, err := fmt.Sscanf(s, "%d/%d/%d", &b.Global, &b.Local, &b.AccumSteps); err != nil || n != 3 || b.Local < 1 || b.AccumSteps < 0 {
		return nil
	}
	return &b
}

// shape describes a placement for people: "1 ps, 4 workers on 2 nodes".
func shape(p *structs.Placement) string {
	if p.Paused() {
		return "paused"
	}
	return fmt.Sprintf("%s on %d nodes", structs.Shape{PS: p.NumPS, Workers: p.NumWorkers}, len(p.Nodes))
}

// translateDeclared returns the Nomad job that runs a job declared in
// Nomad as placed: the user's Nomad job (its template) with the groups
// that carry a role replaced by per-node groups as Translate makes them,
// each a copy of the role's group (every task, network, service and
// volume of it) with Caravan's count, node constraint, environment and
// no scaling block or rescheduling, and GPU requests narrowed to the
// node's model as Translate does. A paused placement keeps the role
// groups at count 0. The metadata marks the version as Caravan's, and
// the UI description says what Caravan runs and why.
func translateDeclared(job *structs.Job, p *structs.Placement, sub Submission) (*api.Job, error) {
	var nj api.Job
	if err := json.Unmarshal(job.Nomad.Template, &nj); err != nil {
		return nil, fmt.Errorf("decode the Nomad template of job %q: %w", job.ID, err)
	}
	templates := map[string]*api.TaskGroup{}
	for _, tg := range nj.TaskGroups {
		templates[*tg.Name] = tg
	}
	nj.Meta = caravanMeta(nj.Meta, job, p, sub)
	nj.UI = &api.JobUIConfig{Description: fmt.Sprintf("Sized and placed by Caravan: %s. %s", shape(p), p.Reason)}
	nj.TaskGroups = nil
	env := contractEnv(job, p, sub)
	rdzv, err := torchrunRendezvous(job, p, sub)
	if err != nil {
		return nil, err
	}
	for _, role := range []string{structs.RolePS, structs.RoleWorker} {
		name := job.Nomad.Groups[role]
		if name == "" && role == structs.RolePS && job.Training.Architecture == structs.ArchitecturePS {
			name = job.Nomad.Groups[structs.RoleWorker] // parameter servers run the worker's tasks
		}
		tmpl := templates[name]
		if tmpl == nil {
			continue
		}
		if p.Paused() {
			tg := copyGroup(tmpl)
			tg.Count, tg.Scaling = new(0), nil
			nj.TaskGroups = append(nj.TaskGroups, tg)
			continue
		}
		res := job.Worker.Resources
		if role == structs.RolePS && job.ParameterServer != nil {
			res = job.ParameterServer.Resources
		}
		base := 0
		for k, n := range p.Nodes {
			count, size := roleOf(n, role)
			if count == 0 {
				continue
			}
			for _, pt := range rdzv.parts(role, count, base) {
				tg := declaredGroup(job, tmpl, role, n, pt, sub)
				tg.Name = new(partName(groupName(role, p, k), pt))
				resizeDeclared(tg, res, size)
				maps.Copy(tg.Meta, groupMeta(role, n, pt.base))
				for _, t := range tg.Tasks {
					maps.Copy(t.Env, env)
					maps.Copy(t.Env, rdzv.roleEnv(role))
				}
				if pt.rdzv {
					rdzv.reserve(tg)
				}
				sub.Collector.add(tg, job, role)
				nj.TaskGroups = append(nj.TaskGroups, tg)
			}
			base += count
		}
	}
	return &nj, nil
}

// declaredGroup is a copy of a declared role's group tmpl for part pt of
// node entry n: Caravan's count, node constraint and rank, no scaling
// block or rescheduling, and GPU requests narrowed to the node's model;
// its tasks' env and meta are copies the caller fills.
func declaredGroup(job *structs.Job, tmpl *api.TaskGroup, role string, n *structs.NodeTasks, pt groupPart, sub Submission) *api.TaskGroup {
	tg := copyGroup(tmpl)
	tg.Count, tg.Scaling = new(pt.count), nil
	tg.Meta = maps.Clone(tg.Meta)
	if tg.Meta == nil {
		tg.Meta = map[string]string{}
	}
	tg.Constraints = append(tg.Constraints, &api.Constraint{LTarget: "${node.unique.id}", RTarget: n.NodeID, Operand: "="})
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	rank := rankTemplate(pt.base)
	for _, t := range tg.Tasks {
		t.Env = maps.Clone(t.Env)
		if t.Env == nil {
			t.Env = map[string]string{}
		}
		t.Env["CARAVAN_ROLE"] = role
		if t.Lifecycle == nil {
			// A stopped task checkpoints first (a new version the
			// user runs stops it).
			t.KillTimeout = new(max(deref(t.KillTimeout), checkpointTimeout(job)))
		}
		t.Templates = append(t.Templates, rank)
		if t.Resources != nil {
			pinModel(t.Resources.Devices, sub.GPUs[n.NodeID])
		}
	}
	return tg
}

// copyGroup returns a deep copy of a task group.
func copyGroup(tg *api.TaskGroup) *api.TaskGroup {
	b, err := json.Marshal(tg)
	if err != nil {
		panic(fmt.Sprintf("encode task group: %v", err)) // plain data always encodes
	}
	var c api.TaskGroup
	if err := json.Unmarshal(b, &c); err != nil {
		panic(fmt.Sprintf("decode task group: %v", err))
	}
	return &c
}

// contractEnv is the environment every task of the job gets (DESIGN.md
// §3), less the role and rank. Besides the contract's variables it passes
// the training block, so that a trainer needs no flags.
func contractEnv(job *structs.Job, p *structs.Placement, sub Submission) map[string]string {
	env := map[string]string{
		"CARAVAN_JOB_ID":         job.ID,
		"CARAVAN_NAMESPACE":      job.Namespace,
		"CARAVAN_NUM_WORKERS":    strconv.Itoa(p.NumWorkers),
		"CARAVAN_NUM_PS":         strconv.Itoa(p.NumPS),
		"CARAVAN_RESUME":         "0",
		"CARAVAN_CHECKPOINT_DIR": checkpointDir(sub.CheckpointDir, job.Namespace, job.ID),
		"CARAVAN_COLLECTOR_ADDR": strings.Join(reportAddrs(sub), ","),
		"CARAVAN_GENERATION":     strconv.Itoa(sub.Generation),
	}
	if sub.Generation > 1 {
		env["CARAVAN_RESUME"] = "1"
	}
	if sub.ReportToken != "" {
		env["CARAVAN_TOKEN"] = sub.ReportToken
	}
	if sub.CoordinatorAddr != "" {
		env["CARAVAN_COORDINATOR_ADDR"] = sub.CoordinatorAddr
	}
	if e := job.Elastic; e != nil && e.Checkpoint != nil {
		env["CARAVAN_CHECKPOINT_SIGNAL"] = e.Checkpoint.Signal
		if e.Checkpoint.Interval > 0 {
			env["CARAVAN_CHECKPOINT_INTERVAL"] = e.Checkpoint.Interval.String()
		}
	}
	env["CARAVAN_CHECKPOINT_TIMEOUT"] = checkpointTimeout(job).String()
	if t := job.Training; t != nil {
		env["CARAVAN_MODE"] = t.Mode
		b := contractBatch(t, p)
		env["CARAVAN_GLOBAL_BATCH_SIZE"] = strconv.Itoa(b.Global)
		env["CARAVAN_LOCAL_BATCH_SIZE"] = strconv.Itoa(b.Local)
		env["CARAVAN_ACCUM_STEPS"] = strconv.Itoa(b.AccumSteps)
		env["CARAVAN_REFERENCE_BATCH_SIZE"] = strconv.Itoa(t.GlobalBatchSize)
		env["CARAVAN_STEPS_PER_EPOCH"] = strconv.Itoa(t.StepsPerEpoch)
		if c := t.Convergence; c != nil {
			env["CARAVAN_CONVERGENCE_THRESHOLD"] = strconv.FormatFloat(c.Threshold, 'g', -1, 64)
			env["CARAVAN_CONVERGENCE_PATIENCE"] = strconv.Itoa(c.Patience)
			env["CARAVAN_MAX_EPOCHS"] = strconv.Itoa(c.MaxEpochs)
		}
	}
	return env
}

// checkpointTimeout is how long the job's tasks may take to checkpoint:
// the job's checkpoint timeout, or the default. It is also their
// kill_timeout, the time a stopped task has to write its checkpoint
// before Nomad kills it (Nomad clients cap it at their max_kill_timeout,
// 30 s by default).
func checkpointTimeout(job *structs.Job) time.Duration {
	if e := job.Elastic; e != nil && e.Checkpoint != nil && e.Checkpoint.Timeout > 0 {
		return e.Checkpoint.Timeout
	}
	return structs.DefaultCheckpointTimeout
}

// contractBatch is the batch a job's tasks train at: the placement's
// (Placement.Batch, decided for a job with batch_size bounds), else the
// job's fixed global batch split evenly over the workers in sync mode
// (rounded down, at least 1), and every worker's own in async mode, with
// no gradient accumulation.
func contractBatch(t *structs.Training, p *structs.Placement) structs.Batch {
	if p.Batch != nil {
		return *p.Batch
	}
	local := t.GlobalBatchSize
	if t.Mode == structs.ModeSync && p.NumWorkers > 0 {
		local = max(1, t.GlobalBatchSize/p.NumWorkers)
	}
	return structs.Batch{Global: t.GlobalBatchSize, Local: local}
}

// reportAddrs are where tasks report: their group's collector first when
// there is one, then the servers.
func reportAddrs(sub Submission) []string {
	if sub.Collector == nil {
		return sub.ReportAddrs
	}
	return append([]string{"http://${NOMAD_ADDR_collector}"}, sub.ReportAddrs...)
}

func group(name, nodeID string, count int, t *api.Task) *api.TaskGroup {
	return &api.TaskGroup{
		Name:  &name,
		Count: &count,
		Constraints: []*api.Constraint{
			{LTarget: "${node.unique.id}", RTarget: nodeID, Operand: "="},
		},
		Tasks: []*api.Task{t},
		RestartPolicy: &api.RestartPolicy{
			Attempts: new(restartAttempts),
			Delay:    new(restartDelay),
			Interval: new(restartInterval),
			Mode:     new("fail"),
		},
		ReschedulePolicy: &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)},
	}
}

// resizeDeclared gives a declared group's tasks the size s, whose role
// resources res are the sum of the group's tasks: the main task (the
// first without a lifecycle, as the jobspec reads it) takes the
// difference, so that its sidecars keep what they asked for.
func resizeDeclared(tg *api.TaskGroup, res *structs.Resources, s structs.TaskSize) {
	if s.IsZero() || res == nil || len(tg.Tasks) == 0 {
		return
	}
	main := tg.Tasks[0]
	for _, t := range tg.Tasks {
		if t.Lifecycle == nil {
			main = t
			break
		}
	}
	cpu, mem := res.Sized(s)
	r := main.Resources
	if r == nil {
		r = &api.Resources{}
	}
	c := *r
	c.CPU = new(cmp.Or(deref(r.CPU), structs.DefaultCPU) + cpu - res.CPU)
	c.MemoryMB = new(cmp.Or(deref(r.MemoryMB), structs.DefaultMemoryMB) + mem - res.MemoryMB)
	main.Resources = &c
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// task builds one role's task at size s (zero fields: the template's).
// A group's allocations share one task definition, so the rank, base
// plus the allocation's index, is rendered by a template into the
// environment.
func task(role string, tmpl *structs.Role, s structs.TaskSize, base int, env, roleEnv map[string]string, killTimeout time.Duration) *api.Task {
	taskEnv := maps.Clone(tmpl.Env)
	if taskEnv == nil {
		taskEnv = map[string]string{}
	}
	maps.Copy(taskEnv, env)
	maps.Copy(taskEnv, roleEnv)
	res := tmpl.Resources
	if res == nil {
		res = &structs.Resources{}
	}
	cpu, mem := res.Sized(s)
	resources := &api.Resources{CPU: new(cpu), MemoryMB: new(mem)}
	for _, d := range res.Devices {
		resources.Devices = append(resources.Devices, &api.RequestedDevice{
			Name:        d.Name,
			Count:       new(uint64(d.Count)),
			Constraints: constraints(d.Constraints),
			Affinities:  affinities(d.Affinities),
		})
	}
	return &api.Task{
		Name:        role,
		Driver:      tmpl.Driver,
		Config:      maps.Clone(tmpl.Config),
		Env:         taskEnv,
		Meta:        maps.Clone(tmpl.Meta),
		Resources:   resources,
		Constraints: constraints(tmpl.Constraints),
		Affinities:  affinities(tmpl.Affinities),
		Templates:   []*api.Template{rankTemplate(base)},
		KillTimeout: new(killTimeout),
	}
}

// pinModel narrows to the model of gpu, a node's GPU device group, each
// request of reqs that gpu satisfies but that names no model: its name
// becomes gpu's full ID, "<vendor>/<type>/<model>", which Nomad matches
// against the device groups of the node. A request that names a model, that
// gpu does not satisfy, or whose name Caravan does not parse is left
// alone; a zero gpu (a node without GPUs, or unknown) changes nothing.
// Constraints and affinities of the requests are kept.
func pinModel(reqs []*api.RequestedDevice, gpu structs.DeviceID) {
	if gpu.Name == "" {
		return
	}
	for _, r := range reqs {
		id, err := structs.ParseDeviceID(r.Name)
		if err != nil || id.Name != "" || !id.Matches(gpu) {
			continue
		}
		r.Name = gpu.String()
	}
}

// rankTemplate renders a task's rank, base plus its allocation's index,
// into its environment: a group's allocations share one task definition.
func rankTemplate(base int) *api.Template {
	rank := fmt.Sprintf(`CARAVAN_RANK={{ env "NOMAD_ALLOC_INDEX" | parseInt | add %d }}`+"\n", base)
	return &api.Template{
		EmbeddedTmpl: &rank,
		DestPath:     new("local/caravan-rank.env"),
		Envvars:      new(true),
		ChangeMode:   new("noop"),
	}
}

func constraints(cs []*structs.Constraint) []*api.Constraint {
	var out []*api.Constraint
	for _, c := range cs {
		out = append(out, &api.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand})
	}
	return out
}

func affinities(as []*structs.Affinity) []*api.Affinity {
	var out []*api.Affinity
	for _, a := range as {
		out = append(out, &api.Affinity{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand, Weight: new(int8(a.Weight))})
	}
	return out
}

// checkpointDir returns the job's checkpoint directory under root. Names
// are validated (structs.Job.Validate), but a name that is not a single path
// element (empty, ".", "..", or holding a separator) is escaped here all the
// same, so the directory never leaves root.
func checkpointDir(root, namespace, id string) string {
	return filepath.Join(root, pathElement(namespace), pathElement(id))
}

// pathElement returns name if it is one path element other than . and ..,
// and name with every byte outside [A-Za-z0-9_.-] escaped as %XX otherwise.
func pathElement(name string) string {
	if name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") {
		return name
	}
	var b strings.Builder
	b.WriteString("%")
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
