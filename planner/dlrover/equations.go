package dlrover

import "math"

// The functions below are DLRover's equations in the paper's unit, CPU
// cores, as pure functions; Plan converts between cores and Nomad's MHz
// (Options.CoreMHz). Roundings are this package's choices (doc.go, A2):
// they are the ones that reproduce the paper's Table 1 and its "+2 workers"
// example.

// Config is a job's configuration after DLRover's optimize stage, in
// cores.
type Config struct {
	// Workers is N_w and WorkerCPU is w, the cores of each worker.
	Workers   int
	WorkerCPU float64
	// PSTotal is s_total, the cores left for parameter servers by eq. 11;
	// PS is N_ps and PSCPU is s, the cores of each.
	PSTotal float64
	PS      int
	PSCPU   float64
}

// Initial is the optimize stage (§4.2, D:158) from the sampling stage's
// measurements: what one worker uses (ŵ, what) and what all parameter
// servers use for one worker's updates (ŝ, shat), for a job capped at
// cTotal cores whose servers get psCPU cores each (s = 16 in the paper).
//
//   - eq. 10 (D:145): N_w = ⌊C_total / (ŵ + ŝ)⌋; the optimize text's
//     N_w = s_total/ŝ (D:158) and eq. 4 (D:129) then hold by themselves,
//     since N_w·(ŵ+ŝ) ≤ C_total gives s_total ≥ N_w·ŝ;
//   - eq. 11 (D:146): s_total = C_total − N_w·ŵ;
//   - N_ps = ⌊s_total / s⌋, at least 1 (D:158);
//   - w = ⌈ŵ⌉, since eq. 6 (D:131) asks for whole cores.
//
// shat may be 0 for a job without parameter servers: N_w = ⌊C_total/ŵ⌋,
// and PS is 0. what must be positive; Workers is at least 1.
func Initial(what, shat, cTotal, psCPU float64) Config {
	nw := int(math.Floor(cTotal/(what+shat) + eps))
	if shat <= 0 {
		return Config{Workers: max(nw, 1), WorkerCPU: math.Ceil(what - eps)}
	}
	nw = max(nw, 1)
	sTotal := cTotal - float64(nw)*what
	return Config{
		Workers:   nw,
		WorkerCPU: math.Ceil(what - eps),
		PSTotal:   sTotal,
		PS:        max(int(math.Floor(sTotal/psCPU+eps)), 1),
		PSCPU:     psCPU,
	}
}

// GrowWorkers is the adjust stage's rule for idle parameter-server CPU
// (D:164): with nw workers, ŝ = ŝ_total/N_w is recomputed from what all
// servers use now (shatTotal), and ΔN_w = min(⌈s_total/ŝ⌉, √K) − N_w, where
// sTotal is the cores the servers are configured with. It returns ΔN_w,
// never below 0. K is undefined in the paper (doc.go, A1).
func GrowWorkers(sTotal, shatTotal float64, nw int, k float64) int {
	if nw <= 0 || shatTotal <= 0 {
		return 0
	}
	shat := shatTotal / float64(nw)
	target := math.Min(math.Ceil(sTotal/shat-eps), math.Floor(math.Sqrt(k)+eps))
	return max(int(target)-nw, 0)
}

// HotPSCPU is the size of the server that replaces a hot one (D:166):
// s = min(ŝ_hot/ŝ_total · ŝ · N_w, C_max), rounded up to whole cores. ŝ_hot
// is what the hot server uses, ŝ_total what all servers use now, ŝ (shat1)
// what all servers used for one worker in the sampling stage, and nw the
// workers now.
func HotPSCPU(shatHot, shatTotal, shat1 float64, nw int, cMax float64) float64 {
	if shatTotal <= 0 {
		return 0
	}
	return math.Min(math.Ceil(shatHot/shatTotal*shat1*float64(nw)-eps), cMax)
}

// eps absorbs floating-point error at the roundings: 200/8 must be 25.
const eps = 1e-9
