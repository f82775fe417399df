package goodput

import "math"

// PerfParams are the parameters of Pollux's throughput model (goodput.py
// PerfParams): compute time α_c + β_c·local, network time α_n + β_n·(r−2)
// across nodes or α_r + β_r·(r−2) within one, combined by the γ-norm. The
// α and β are positive seconds; Gamma lies in [1, 10].
type PerfParams struct {
	AlphaC, BetaC float64
	AlphaN, BetaN float64
	AlphaR, BetaR float64
	Gamma         float64
}

// Slice returns the parameters in goodput.py's order: α_c, β_c, α_n, β_n,
// α_r, β_r, γ.
func (p PerfParams) Slice() []float64 {
	return []float64{p.AlphaC, p.BetaC, p.AlphaN, p.BetaN, p.AlphaR, p.BetaR, p.Gamma}
}

// tiny stands for the artifact's 1e-8: the network time of one replica,
// and the floor of every positive parameter.
const tiny = 1e-8

// ComputeTime is the time of one forward and backward pass over a local
// batch (goodput.py _predict_accum_time).
func (p PerfParams) ComputeTime(local float64) float64 { return p.AlphaC + p.BetaC*local }

// NetworkTime is the time to exchange gradients among replicas spread
// over nodes (goodput.py _predict_network_time): the slowest link's
// constant plus a retrogression per replica beyond two; next to nothing
// for one replica.
func (p PerfParams) NetworkTime(nodes, replicas int) float64 {
	extra := max(float64(replicas-2), tiny)
	switch {
	case nodes > 1:
		return p.AlphaN + p.BetaN*extra
	case replicas > 1:
		return p.AlphaR + p.BetaR*extra
	}
	return tiny + tiny*extra
}

// SyncTime is the time of the pass that ends an optimizer step: its
// computation overlapped with the gradient exchange as the γ-norm
// (goodput.py _predict_log_optim_time).
func (p PerfParams) SyncTime(compute, network float64) float64 {
	// Scale by the larger term so that x^γ cannot overflow or underflow.
	m := max(compute, network)
	if m <= 0 {
		return 0
	}
	return m * math.Pow(math.Pow(compute/m, p.Gamma)+math.Pow(network/m, p.Gamma), 1/p.Gamma)
}

// StepTime is the time of one optimizer step: accum passes that only
// compute, then the synchronising one.
func (p PerfParams) StepTime(nodes, replicas int, local float64, accum int) float64 {
	tc := p.ComputeTime(local)
	return float64(accum)*tc + p.SyncTime(tc, p.NetworkTime(nodes, replicas))
}

// Throughput is the samples a second processed at a placement, local
// batch and accumulation steps (goodput.py GoodputFunction.throughput).
func (p PerfParams) Throughput(nodes, replicas int, local float64, accum int) float64 {
	return float64(replicas) * local * float64(accum+1) / p.StepTime(nodes, replicas, local, accum)
}

// GradParams are a job's gradient noise statistics (goodput.py
// GradParams): Sqr the squared norm of the true gradient, Var the
// variance of the gradient averaged over a batch of the job's reference
// size M₀. Var·M₀/Sqr is the gradient noise scale.
type GradParams struct {
	Sqr, Var float64
}

// AtReference converts statistics measured over a batch of batch samples
// to the reference batch ref: the variance of a mean falls as the batch
// grows.
func AtReference(sqr, variance float64, batch, ref int) GradParams {
	return GradParams{Sqr: sqr, Var: variance * float64(batch) / float64(ref)}
}

// NoiseScale is the gradient noise scale Var·M₀/Sqr for reference batch
// ref; +Inf when Sqr is 0 and Var is not.
func (g GradParams) NoiseScale(ref int) float64 {
	if g.Var == 0 {
		return 0
	}
	return g.Var * float64(ref) / g.Sqr
}

// Efficiency is the statistical efficiency of a batch of batch samples
// relative to the reference batch ref: the progress one sample makes,
// (φ + M₀)/(φ + M) for the noise scale φ (goodput.py
// GoodputFunction.efficiency). Without statistics (both 0) a sample of a
// larger batch counts as 1/scale of one: gain stays 1.
func (g GradParams) Efficiency(batch float64, ref int) float64 {
	scale := batch / float64(ref)
	gain := 1.0
	if denom := g.Var/scale + g.Sqr; denom > 0 {
		gain = (g.Var + g.Sqr) / denom
	}
	return gain / scale
}

// Model is a job's goodput model: its throughput parameters, its gradient
// statistics and its reference batch (the batch its learning rate was
// tuned for; Pollux's initial batch size).
type Model struct {
	Perf     PerfParams
	Grad     GradParams
	RefBatch int
}

// Goodput is throughput times statistical efficiency: the samples a
// second processed, each counted by what it contributes at the batch size
// replicas × local × (accum + 1) (goodput.py GoodputFunction.evaluate).
func (m *Model) Goodput(nodes, replicas int, local float64, accum int) float64 {
	batch := float64(replicas) * local * float64(accum+1)
	return m.Perf.Throughput(nodes, replicas, local, accum) * m.Grad.Efficiency(batch, m.RefBatch)
}

// Limits bound the batch configurations Optimize chooses from: the global
// batch within [MinBatch, MaxBatch], the local batch within [MinLocal,
// MaxLocal]. Accumulation allows gradient accumulation, so that a replica
// whose share exceeds MaxLocal computes it over several passes.
type Limits struct {
	MinBatch, MaxBatch int
	MinLocal, MaxLocal int
	Accumulation       bool
}

// Config is a batch configuration at a placement and its goodput:
// Global = replicas × Local × (Accum + 1).
type Config struct {
	Global, Local, Accum int
	Goodput              float64
}

// candidates is how many global batch sizes Optimize evaluates, spaced
// geometrically between the bounds, as goodput.py's np.geomspace.
const candidates = 50

// eps is the tolerance of goodput.py's floor and ceiling operations.
const eps = 1e-8

// Optimize returns the batch configuration with the largest goodput at a
// placement of replicas over nodes (goodput.py GoodputFunction.optimize):
// among 50 global batch sizes spaced geometrically from max(MinBatch,
// MinLocal × replicas) to MaxBatch, each split into the fewest
// accumulation passes that keep the local batch within MaxLocal (with one
// replica, at least one pass above the reference batch: the artifact's
// gradient statistics need two). Unlike the artifact, a split whose
// rounding would exceed MaxBatch takes a smaller local batch, as the
// artifact's simulator does (simulator.py update_local_bsz). ok is false
// when no configuration keeps the bounds.
func (m *Model) Optimize(nodes, replicas int, lim Limits) (best Config, ok bool) {
	r := float64(replicas)
	lo := max(float64(lim.MinBatch), float64(lim.MinLocal)*r)
	hi := float64(lim.MaxBatch)
	if replicas < 1 || lo > hi {
		return Config{}, false
	}
	ratio := 1.0
	if hi > lo {
		ratio = math.Pow(hi/lo, 1.0/(candidates-1))
	}
	batch := lo
	prevLocal, prevAccum := -1, -1
	for k := range candidates {
		if k == candidates-1 {
			batch = hi // no rounding drift at the top
		}
		local, accum := Split(batch, replicas, m.RefBatch, lim)
		batch *= ratio
		if local == prevLocal && accum == prevAccum {
			continue
		}
		prevLocal, prevAccum = local, accum
		if local < max(lim.MinLocal, 1) || local > lim.MaxLocal {
			continue
		}
		g := m.Goodput(nodes, replicas, float64(local), accum)
		if !ok || g > best.Goodput {
			best = Config{Global: replicas * local * (accum + 1), Local: local, Accum: accum, Goodput: g}
			ok = true
		}
		if hi == lo {
			break
		}
	}
	return best, ok
}

// Split divides a global batch over replicas (goodput.py optimize and
// simulator.py update_local_bsz): the fewest accumulation passes that
// keep the local batch within MaxLocal when accumulation is allowed (with
// one replica, at least one pass above the reference batch ref), the
// local batch rounded up, then lowered where the rounding would exceed
// MaxBatch. The local batch may fall outside [MinLocal, MaxLocal]; the
// caller checks.
func Split(batch float64, replicas, ref int, lim Limits) (local, accum int) {
	share := batch / float64(replicas)
	if lim.Accumulation && lim.MaxLocal > 0 {
		accum = int(math.Ceil(share/float64(lim.MaxLocal)-eps)) - 1
		if replicas == 1 && share > float64(ref)+eps {
			accum = max(accum, 1)
		}
		accum = max(accum, 0)
	}
	local = int(math.Ceil(share/float64(accum+1) - eps))
	if count := replicas * (accum + 1); lim.MaxBatch > 0 && local*count > lim.MaxBatch {
		local = lim.MaxBatch / count
	}
	return local, accum
}

// Fixed returns the configuration of a fixed global batch at replicas: its
// split (Split), with its goodput when m is not nil.
func (m *Model) Fixed(nodes, replicas, batch int, lim Limits) Config {
	local, accum := Split(float64(batch), replicas, batch, lim)
	local = max(local, 1)
	c := Config{Global: replicas * local * (accum + 1), Local: local, Accum: accum}
	if m != nil {
		c.Goodput = m.Goodput(nodes, replicas, float64(local), accum)
	}
	return c
}
