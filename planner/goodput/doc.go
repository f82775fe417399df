// Package goodput is Pollux's model of a training job's goodput: how many
// samples a second it processes (throughput) times how much each sample
// counts towards convergence at the batch size it is processed in
// (statistical efficiency). The Pollux policy (planner/pollux) sizes jobs
// and chooses their batch sizes by it; the server fits it online from
// trainers' samples (server/scheduler).
//
// The model is that of the Pollux artifact's goodput.py (Petuum, Apache
// 2.0), written anew for Caravan:
//
//   - PerfParams (goodput.py PerfParams) predicts the time of one
//     optimizer step from the placement (nodes, replicas), the local batch
//     one replica computes in a pass and the passes it accumulates:
//     compute T_c = α_c + β_c·local; network T_n = α_n + β_n·(replicas−2)
//     across nodes, α_r + β_r·(replicas−2) within one node, nothing for one
//     replica; the synchronising pass overlaps the two as the γ-norm
//     (T_c^γ + T_n^γ)^(1/γ); each accumulation pass adds T_c.
//   - GradParams (goodput.py GradParams) are the gradient noise
//     statistics; Efficiency(M) = (φ + M₀)/(φ + M) for the noise scale
//     φ = M₀·var/sqr (goodput.py GoodputFunction.efficiency), M₀ the
//     job's reference batch.
//   - Model.Optimize (goodput.py GoodputFunction.optimize) chooses the
//     batch, local batch and accumulation steps that maximise goodput at
//     a placement, among 50 batch sizes spaced geometrically between the
//     bounds.
//   - FitPerf (goodput.py fit_perf_params) fits PerfParams to measured
//     step times by minimising the same objective: the root-mean-square
//     error of the logarithms of the compute and step times, with the
//     artifact's regularisers and the same rules for parameters the
//     measurements cannot determine. The artifact uses scipy's bounded
//     L-BFGS-B; this package maps the bounds away (p = 10⁻⁸ + eˣ,
//     γ = 1 + 9·sigmoid(x)) and minimises with gonum's BFGS. Both stop
//     at a gradient whose largest component is under 1e-5, scipy's
//     default; here that gradient is along x.
//
// Everything here is pure computation, deterministic, and safe for
// concurrent use on distinct values. Times are seconds; batches are
// samples.
package goodput
