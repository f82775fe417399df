package dlrover

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// jobPlan is the planning of one job.
type jobPlan struct {
	*env
	j           *planner.Job
	tasks       planner.JobTasks
	psRes, wRes *structs.Resources
	// cur is the job's running placement, nil when it runs nothing;
	// sample is the shape of the sampling stage.
	cur    *structs.Placement
	sample structs.Shape
	// notes are said in the job's reason whatever it gets.
	notes []string
}

// target is what DLRover wants a job to run: tasks that stay on their
// node (pinned; they move only when their node has no room left) and
// tasks placed anywhere (float).
type target struct {
	// keep asks for the current placement as it is.
	keep    bool
	pinned  []*structs.NodeTasks
	float   []group
	reason  string
	actions []*structs.TaskAction
}

// group is n tasks of one role at one size.
type group struct {
	ps   bool
	n    int
	size structs.TaskSize
}

func (e *env) planJob(c *planner.Cluster, j *planner.Job) *structs.Placement {
	p := &jobPlan{env: e, j: j, tasks: c.JobTasks(j), psRes: j.PSRole().Resources, wRes: j.Job.Worker.Resources, sample: j.Minimum()}
	if j.Current != nil && !j.Current.Paused() {
		p.cur = j.Current
	}
	t := p.target()
	var why string
	if !t.keep && !p.sameAsCurrent(t) {
		if pl, ok := p.place(c, t); ok {
			pl.Reason, pl.Actions = p.say(t.reason), t.actions
			return pl
		}
		why = "; its target does not fit: " + t.reason
	} else if t.keep {
		why = ": " + t.reason
	} else {
		why = ": " + t.reason + "; it runs so already"
	}
	if p.cur != nil {
		if kept := c.KeepCurrent(p.cur, p.tasks, p.cur.NumPS, p.cur.NumWorkers); kept != nil {
			kept.Reason, kept.Actions, kept.Metric = p.say("dlrover: keeps running where it runs"+why), nil, nil
			return kept
		}
	}
	m := p.sample
	if nodes, ok := placement.New(c).Place(p.tasks.PS, m.PS, p.tasks.Worker, m.Workers); ok {
		return &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: m.PS, NumWorkers: m.Workers, Nodes: nodes,
			Reason: p.say(fmt.Sprintf("dlrover: at its minimum of %s at the roles' sizes", structs.Shape{PS: m.PS, Workers: m.Workers}) + why),
		}
	}
	return planner.Paused(j, p.say(fmt.Sprintf("dlrover: waiting for room for its minimum of %s", structs.Shape{PS: m.PS, Workers: m.Workers})))
}

// say appends the notes to a reason.
func (p *jobPlan) say(reason string) string {
	if len(p.notes) == 0 {
		return reason
	}
	return reason + "; " + strings.Join(p.notes, "; ")
}

// target runs DLRover's stages (§4.2) on what the request says of the
// job: sample until the sampling shape was measured, then optimize, then
// adjust at most every MinInterval. OOM kills are handled at once.
func (p *jobPlan) target() *target {
	if p.cur == nil {
		if p.sampled() != nil {
			return p.optimize()
		}
		return p.sampling()
	}
	if t := p.oom(); t != nil {
		return t
	}
	if p.j.Since > 0 && p.now-p.j.Since < int64(p.opts.MinInterval) {
		return &target{keep: true, reason: fmt.Sprintf("dlrover: changed %s ago, waits %s between adjustments (§6.1, D:232)",
			time.Duration(p.now-p.j.Since).Round(time.Second), p.opts.MinInterval)}
	}
	if p.atSample() {
		if p.sampled() == nil {
			return &target{keep: true, reason: fmt.Sprintf("dlrover sample: measuring ŵ and ŝ at %s (§4.2, D:156)", structs.Shape{PS: p.sample.PS, Workers: p.sample.Workers})}
		}
		return p.optimize()
	}
	if t := p.busyPS(); t != nil {
		return t
	}
	if t := p.grow(); t != nil {
		return t
	}
	return &target{keep: true, reason: "dlrover adjust: nothing to adjust"}
}

// atSample reports whether the job runs at the sampling shape, unsized.
func (p *jobPlan) atSample() bool {
	return p.cur.NumPS == p.sample.PS && p.cur.NumWorkers == p.sample.Workers &&
		!slices.ContainsFunc(p.cur.Nodes, (*structs.NodeTasks).Sized)
}

// sampled returns the job's usage measured at the sampling shape, nil
// until it was.
func (p *jobPlan) sampled() *structs.ShapeUsage {
	s := p.j.Usage.Shape(p.sample)
	if s == nil || s.Measurements == 0 || s.WorkerCPUMHz <= 0 {
		return nil
	}
	return s
}

// sampling is the sampling stage (D:156): one worker (the job's minimum)
// and a few servers (its minimum, at least one), at the roles' initial
// sizes, which for a cpu range is its maximum, capped at C_max.
func (p *jobPlan) sampling() *target {
	ps := group{ps: true, n: p.sample.PS, size: structs.TaskSize{CPU: p.cpu(p.psRes, min(float64(p.psRes.CPU), p.cMax))}}
	w := group{n: p.sample.Workers, size: structs.TaskSize{CPU: p.cpu(p.wRes, min(float64(p.wRes.CPU), p.cMax))}}
	return &target{float: []group{ps, w}, reason: fmt.Sprintf("dlrover sample: %s at the roles' initial cpu, to measure ŵ and ŝ (§4.2, D:156)", structs.Shape{PS: ps.n, Workers: w.n})}
}

// optimize is the optimize stage (D:158) from the sampling stage's
// measurements, by Initial (eqs. 10 and 11), within the job's bounds and
// C_total at the sizes the roles' ranges allow.
func (p *jobPlan) optimize() *target {
	s := p.sampled()
	what := s.WorkerCPUMHz / p.mhz
	shat := 0.0
	if p.j.HasPS() {
		shat = s.PSCPUMHz / float64(p.sample.Workers) / p.mhz
	}
	cfg := Initial(what, shat, p.opts.TotalCores, p.opts.PSCores)
	psb, wb := p.j.Bounds()
	nw := clamp(cfg.Workers, max(wb.Min, 1), wb.Max)
	nps := 0
	if p.j.HasPS() {
		nps = clamp(cfg.PS, max(psb.Min, 1), psb.Max)
	}
	w := group{n: nw, size: structs.TaskSize{CPU: p.cpu(p.wRes, min(cfg.WorkerCPU*p.mhz, p.cMax)), MemoryMB: p.workerMemory()}}
	ps := group{ps: true, n: nps, size: structs.TaskSize{CPU: p.cpu(p.psRes, p.psCPU)}}
	// Eq. 3 with ≤ (A4), at the sizes the tasks really get.
	for w.n > max(wb.Min, 1) && p.cpuOf(ps)+p.cpuOf(w) > p.cTotal {
		w.n--
	}
	var reason string
	if p.j.HasPS() {
		reason = fmt.Sprintf("dlrover optimize: ŵ %.2f and ŝ %.2f cores at %d worker(s); eq. 10 N_w = ⌊%g/(ŵ+ŝ)⌋ ∧ ⌊s_total/ŝ⌋ = %d, eq. 11 s_total = %.1f cores, N_ps = ⌊s_total/%g⌋ = %d, w = ⌈ŵ⌉ = %g cores (§4.1-4.2, D:145-158)",
			what, shat, p.sample.Workers, p.opts.TotalCores, cfg.Workers, cfg.PSTotal, p.opts.PSCores, cfg.PS, cfg.WorkerCPU)
	} else {
		reason = fmt.Sprintf("dlrover optimize: ŵ %.2f cores; eq. 10 without servers N_w = ⌊%g/ŵ⌋ = %d, w = ⌈ŵ⌉ = %g cores (D:145)",
			what, p.opts.TotalCores, cfg.Workers, cfg.WorkerCPU)
	}
	if nw != cfg.Workers || nps != cfg.PS && p.j.HasPS() || w.n != nw {
		reason += fmt.Sprintf("; %s within the job's bounds and C_total", structs.Shape{PS: nps, Workers: w.n})
	}
	t := &target{float: []group{ps, w}, reason: reason}
	for _, g := range t.float {
		if g.n > 0 && !p.norm(g.ps, g.size).IsZero() {
			role, res := roleOf(g.ps), p.res(g.ps)
			cpu, mem := res.Sized(g.size)
			t.actions = append(t.actions, &structs.TaskAction{Kind: structs.ActionResized, Role: role, Rank: -1,
				Reason:  fmt.Sprintf("dlrover optimize: every %s at %d MHz and %d MB", role, cpu, mem),
				Details: map[string]string{"CPU": fmt.Sprint(cpu), "MemoryMB": fmt.Sprint(mem)}})
		}
	}
	return t
}

// oom handles OOM kills in the job's current run (D:156): a worker killed
// for memory restarts with double memory; parameter servers killed
// PSOOMThreshold times double their count (or, at their count's maximum,
// their memory). Kills from before the current placement ran (LastOOM
// before Since) or at another size than the task's entry are stale and
// ignored. It returns nil when there is nothing to do.
func (p *jobPlan) oom() *target {
	if p.j.Usage == nil {
		return nil
	}
	t := p.fromCurrent()
	psKills := 0
	var psKilled []*structs.TaskUsage
	for _, u := range p.j.Usage.Tasks {
		if u.OOMKills == 0 || p.j.Since > 0 && u.LastOOM > 0 && u.LastOOM < p.j.Since {
			continue
		}
		if u.Role == structs.RolePS {
			psKills += u.OOMKills
			psKilled = append(psKilled, u)
			continue
		}
		p.doubleMemory(t, false, u)
	}
	if p.j.HasPS() && psKills >= p.opts.PSOOMThreshold {
		psb, _ := p.j.Bounds()
		if n := min(2*p.cur.NumPS, psb.Max); n > p.cur.NumPS {
			size := structs.TaskSize{}
			if nt := t.find(true, psKilled[0], p.tasks, false); nt != nil {
				size = nt.PSSize
			}
			t.float = append(t.float, group{ps: true, n: n - p.cur.NumPS, size: size})
			t.actions = append(t.actions, &structs.TaskAction{Kind: structs.ActionOOMResized, Role: structs.RolePS, Rank: -1,
				Reason:  fmt.Sprintf("parameter servers OOM-killed %d times: N_ps doubled, %d → %d, for more memory in total (§4.2, D:156)", psKills, p.cur.NumPS, n),
				Details: map[string]string{"PS": fmt.Sprintf("%d→%d", p.cur.NumPS, n), "OOMKills": fmt.Sprint(psKills)}})
		} else {
			for _, u := range psKilled {
				p.doubleMemory(t, true, u)
			}
		}
	}
	if len(t.actions) == 0 {
		return nil
	}
	t.reason = "dlrover: OOM kills handled at once"
	return t
}

// doubleMemory moves the task u of an entry of t to an entry of its own
// at double memory, capped by the role's range; with a fixed memory or at
// the cap it only notes why not.
func (p *jobPlan) doubleMemory(t *target, ps bool, u *structs.TaskUsage) {
	role, res := roleOf(ps), p.res(ps)
	nt := t.find(ps, u, p.tasks, true)
	if nt == nil {
		return // stale: no task of that size there any more
	}
	size := nt.WorkerSize
	if ps {
		size = nt.PSSize
	}
	_, old := res.Sized(size)
	if res.MemoryRange == nil {
		p.notes = append(p.notes, fmt.Sprintf("%s %d was OOM-killed, but its memory is fixed at %d MB", role, u.Rank, old))
		return
	}
	mem := min(2*old, cmp.Or(res.MemoryRange.Max, p.nodeMem))
	if mem <= old {
		p.notes = append(p.notes, fmt.Sprintf("%s %d was OOM-killed at its memory maximum of %d MB", role, u.Rank, old))
		return
	}
	size.MemoryMB = mem
	t.detach(nt, ps)
	t.pinned = append(t.pinned, entry(nt.NodeID, ps, 1, size))
	t.actions = append(t.actions, &structs.TaskAction{Kind: structs.ActionOOMResized, Role: role, Rank: u.Rank, NodeID: u.NodeID,
		Reason:  fmt.Sprintf("%s %d was OOM-killed at %d MB: it restarts with double memory, %d MB (§4.2, D:156)", role, u.Rank, old, mem),
		Details: map[string]string{"MemoryMB": fmt.Sprintf("%d→%d", old, mem), "OOMKills": fmt.Sprint(u.OOMKills)}})
}

// busyPS gives parameter servers above PSUtil more CPU (D:156, D:166): a
// hot one (HotRatio times the median server's use) is replaced by a
// server of HotPSCPU cores; otherwise each busy server's CPU doubles, up
// to C_max and its range; when none can grow, the job gets one more
// server. It returns nil when no server is busy or nothing can be done.
func (p *jobPlan) busyPS() *target {
	servers := p.usages(structs.RolePS)
	var busy []*structs.TaskUsage
	for _, u := range servers {
		if u.CPULimitMHz > 0 && u.CPUMHz >= p.opts.PSUtil*float64(u.CPULimitMHz) {
			busy = append(busy, u)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	t := p.fromCurrent()
	total := 0.0
	use := make([]float64, len(servers))
	for i, u := range servers {
		total += u.CPUMHz
		use[i] = u.CPUMHz
	}
	median := model.Median(use)
	hot := slices.MaxFunc(busy, func(a, b *structs.TaskUsage) int {
		return cmp.Or(cmp.Compare(a.CPUMHz, b.CPUMHz), cmp.Compare(b.Rank, a.Rank))
	})
	if s := p.sampled(); s != nil && len(servers) >= 2 && hot.CPUMHz >= p.opts.HotRatio*median && p.res(true).CPURange != nil {
		shat1 := s.PSCPUMHz / float64(p.sample.Workers)
		cores := HotPSCPU(hot.CPUMHz/p.mhz, total/p.mhz, shat1/p.mhz, p.cur.NumWorkers, p.opts.PodCores)
		if nt := t.find(true, hot, p.tasks, false); nt != nil {
			old, _ := p.psRes.Sized(nt.PSSize)
			if cpu := p.cpu(p.psRes, cores*p.mhz); cpu > old {
				size := nt.PSSize
				size.CPU = cpu
				t.detach(nt, true)
				t.float = append(t.float, group{ps: true, n: 1, size: size})
				t.reason = fmt.Sprintf("dlrover adjust: hot parameter server %d uses %.1f cores, %.1f× the median server: replaced by one of %d MHz, s = min(ŝ_hot/ŝ_total·ŝ·N_w, C_max) = min(%.1f/%.1f·%.2f·%d, %g) cores (§4.2, D:166)",
					hot.Rank, hot.CPUMHz/p.mhz, hot.CPUMHz/median, cpu, hot.CPUMHz/p.mhz, total/p.mhz, shat1/p.mhz, p.cur.NumWorkers, p.opts.PodCores)
				t.actions = append(t.actions, &structs.TaskAction{Kind: structs.ActionHotPSReplaced, Role: structs.RolePS, Rank: hot.Rank, NodeID: hot.NodeID,
					Reason:  fmt.Sprintf("hot: %.1f of %d MHz, %.1f× the median server; replaced by a server of %d MHz", hot.CPUMHz, hot.CPULimitMHz, hot.CPUMHz/median, cpu),
					Details: map[string]string{"CPU": fmt.Sprintf("%d→%d", old, cpu)}})
				return t
			}
		}
	}
	if p.psRes.CPURange != nil {
		for _, u := range busy {
			nt := t.find(true, u, p.tasks, false)
			if nt == nil {
				continue
			}
			old, _ := p.psRes.Sized(nt.PSSize)
			cpu := p.cpu(p.psRes, min(2*float64(old), p.cMax))
			if cpu <= old || p.configured(t)+float64(cpu-old) > p.cTotal {
				continue
			}
			size := nt.PSSize
			size.CPU = cpu
			t.detach(nt, true)
			t.pinned = append(t.pinned, entry(nt.NodeID, true, 1, size))
			t.actions = append(t.actions, &structs.TaskAction{Kind: structs.ActionResized, Role: structs.RolePS, Rank: u.Rank, NodeID: u.NodeID,
				Reason:  fmt.Sprintf("at %.0f%% of its %d MHz, over %.0f%%: CPU doubled to %d MHz (§4.2, D:156)", 100*u.CPUMHz/float64(u.CPULimitMHz), u.CPULimitMHz, 100*p.opts.PSUtil, cpu),
				Details: map[string]string{"CPU": fmt.Sprintf("%d→%d", old, cpu)}})
		}
		if len(t.actions) > 0 {
			t.reason = fmt.Sprintf("dlrover adjust: %d parameter server(s) over %.0f%% of their CPU get more", len(t.actions), 100*p.opts.PSUtil)
			return t
		}
	}
	psb, _ := p.j.Bounds()
	add := group{ps: true, n: 1}
	if nt := t.find(true, busy[0], p.tasks, false); nt != nil {
		add.size = nt.PSSize
	}
	if p.cur.NumPS >= psb.Max || p.configured(t)+p.cpuOf(add) > p.cTotal {
		p.notes = append(p.notes, fmt.Sprintf("%d parameter server(s) over %.0f%% of their CPU, which cannot grow within the job's bounds and C_total", len(busy), 100*p.opts.PSUtil))
		return nil
	}
	t.float = append(t.float, add)
	t.reason = fmt.Sprintf("dlrover adjust: %d parameter server(s) over %.0f%% of their CPU at their maximum: one more server, %d → %d (§4.2, D:156)", len(busy), 100*p.opts.PSUtil, p.cur.NumPS, p.cur.NumPS+1)
	return t
}

// grow adds workers while the servers have CPU to spare (D:164), by
// GrowWorkers, within the job's bounds and C_total (A13). New workers get
// ⌈ŵ⌉ cores and the running workers' most memory with a margin (D:158).
func (p *jobPlan) grow() *target {
	if !p.j.HasPS() {
		return nil
	}
	shape := structs.Shape{PS: p.cur.NumPS, Workers: p.cur.NumWorkers}
	shatTotal, what := 0.0, 0.0
	if s := p.j.Usage.Shape(shape); s != nil && s.Measurements > 0 {
		shatTotal, what = s.PSCPUMHz, s.WorkerCPUMHz
	} else {
		workers := p.usages(structs.RoleWorker)
		for _, u := range p.usages(structs.RolePS) {
			shatTotal += u.CPUMHz
		}
		for _, u := range workers {
			what += u.CPUMHz / float64(len(workers))
		}
	}
	if shatTotal <= 0 || what <= 0 {
		return nil
	}
	t := p.fromCurrent()
	sTotal := 0.0
	for _, nt := range p.cur.Nodes {
		cpu, _ := p.psRes.Sized(nt.PSSize)
		sTotal += float64(nt.PS * cpu)
	}
	_, wb := p.j.Bounds()
	k := p.opts.K
	if k == 0 {
		k = float64(wb.Max * wb.Max)
	}
	grow := GrowWorkers(sTotal/p.mhz, shatTotal/p.mhz, p.cur.NumWorkers, k)
	w := group{n: min(grow, wb.Max-p.cur.NumWorkers), size: structs.TaskSize{
		CPU: p.cpu(p.wRes, min(math.Ceil(what/p.mhz-eps)*p.mhz, p.cMax)), MemoryMB: p.workerMemory()}}
	if per := p.cpuOf(group{n: 1, size: w.size}); per > 0 {
		if room := int((p.cTotal - p.configured(t)) / per); room < w.n {
			if room < 1 {
				p.notes = append(p.notes, fmt.Sprintf("ΔN_w = +%d, but the job is at C_total = %g cores (A13)", grow, p.opts.TotalCores))
			}
			w.n = room
		}
	}
	if w.n <= 0 {
		return nil
	}
	t.float = append(t.float, w)
	t.reason = fmt.Sprintf("dlrover adjust: servers use %.1f of %.1f cores; ŝ = ŝ_total/N_w = %.2f, ΔN_w = min(⌈s_total/ŝ⌉, √K) − N_w = %d, +%d workers (§4.2, D:164)",
		shatTotal/p.mhz, sTotal/p.mhz, shatTotal/p.mhz/float64(p.cur.NumWorkers), grow, w.n)
	return t
}

// usages returns the usage of the job's tasks of a role, sorted by rank.
func (p *jobPlan) usages(role string) []*structs.TaskUsage {
	if p.j.Usage == nil {
		return nil
	}
	var out []*structs.TaskUsage
	for _, u := range p.j.Usage.Tasks {
		if u.Role == role {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *structs.TaskUsage) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

// workerMemory is the memory of new workers: the most a running worker
// used, with MemMargin more, within the role's range; 0 (the role's size)
// for a fixed memory or when none was measured.
func (p *jobPlan) workerMemory() int {
	r := p.wRes.MemoryRange
	if r == nil {
		return 0
	}
	most := 0.0
	for _, u := range p.usages(structs.RoleWorker) {
		most = max(most, u.MaxMemoryMB, u.MemoryMB)
	}
	if most == 0 {
		return 0
	}
	return clamp(int(math.Ceil(most*(1+p.opts.MemMargin))), r.Min, cmp.Or(r.Max, p.nodeMem))
}

// cpu is a CPU size of mhz for a role with resources r, within its range;
// 0 (the role's size) when its CPU is fixed.
func (p *jobPlan) cpu(r *structs.Resources, mhz float64) int {
	if r.CPURange == nil {
		return 0
	}
	return clamp(int(math.Ceil(mhz-eps)), r.CPURange.Min, cmp.Or(r.CPURange.Max, p.nodeCPU))
}

// res returns the resources of a role.
func (p *jobPlan) res(ps bool) *structs.Resources {
	if ps {
		return p.psRes
	}
	return p.wRes
}

// norm drops from a size what equals the role's own size.
func (p *jobPlan) norm(ps bool, s structs.TaskSize) structs.TaskSize {
	r := p.res(ps)
	if s.CPU == r.CPU {
		s.CPU = 0
	}
	if s.MemoryMB == r.MemoryMB {
		s.MemoryMB = 0
	}
	return s
}

// cpuOf is the CPU (MHz) a group's tasks get.
func (p *jobPlan) cpuOf(g group) float64 {
	cpu, _ := p.res(g.ps).Sized(g.size)
	return float64(g.n * cpu)
}

// configured is the CPU (MHz) a target's tasks get.
func (p *jobPlan) configured(t *target) float64 {
	sum := 0.0
	for _, nt := range t.pinned {
		sum += p.cpuOf(group{ps: true, n: nt.PS, size: nt.PSSize}) + p.cpuOf(group{n: nt.Workers, size: nt.WorkerSize})
	}
	for _, g := range t.float {
		sum += p.cpuOf(g)
	}
	return sum
}

// fromCurrent returns a target that keeps the current placement's tasks
// where they are, for adjustments to change.
func (p *jobPlan) fromCurrent() *target {
	t := &target{}
	for _, nt := range p.cur.Nodes {
		c := *nt
		t.pinned = append(t.pinned, &c)
	}
	return t
}

// find returns the pinned entry that runs the task u of a role: on its
// node, preferring the size it reports. strict requires that size (a
// kill at another size is stale).
func (t *target) find(ps bool, u *structs.TaskUsage, tasks planner.JobTasks, strict bool) *structs.NodeTasks {
	var loose *structs.NodeTasks
	for _, nt := range t.pinned {
		if nt.NodeID != u.NodeID || count(nt, ps) == 0 {
			continue
		}
		pt, wt := tasks.For(nt)
		task := wt
		if ps {
			task = pt
		}
		if (u.CPULimitMHz == 0 || u.CPULimitMHz == task.CPU) && (u.MemoryLimitMB == 0 || u.MemoryLimitMB == task.MemoryMB) {
			return nt
		}
		if loose == nil {
			loose = nt
		}
	}
	if strict {
		return nil
	}
	return loose
}

// detach takes one task of a role out of a pinned entry.
func (t *target) detach(nt *structs.NodeTasks, ps bool) {
	if ps {
		nt.PS--
	} else {
		nt.Workers--
	}
}

func count(nt *structs.NodeTasks, ps bool) int {
	if ps {
		return nt.PS
	}
	return nt.Workers
}

// entry returns an entry of n tasks of one role at size s on a node.
func entry(node string, ps bool, n int, s structs.TaskSize) *structs.NodeTasks {
	if ps {
		return &structs.NodeTasks{NodeID: node, PS: n, PSSize: s}
	}
	return &structs.NodeTasks{NodeID: node, Workers: n, WorkerSize: s}
}

func roleOf(ps bool) string {
	if ps {
		return structs.RolePS
	}
	return structs.RoleWorker
}

func clamp(v, lo, hi int) int {
	if hi > 0 && v > hi {
		v = hi
	}
	return max(v, lo)
}
