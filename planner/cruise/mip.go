package cruise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoSolver is returned by SolveMIP when glpsol is not installed
// (`make tools` installs it).
var ErrNoSolver = errors.New("cruise: glpsol not found: install GLPK (make tools)")

// DefaultLevels is how many values of the servers' per-mini-batch time
// SolveMIP offers the solver: consecutive levels differ by a factor of
// (τ_max/τ_min)^(1/levels), about 3.7% on §3.4.5's 32 machines.
const DefaultLevels = 200

// MIPSolution is Figure 3.2's problem solved for machines that differ.
type MIPSolution struct {
	// Workers and Servers index the machines given to SolveMIP.
	Workers, Servers []int
	// Data is each worker's share of the training data (d_i/D), in the
	// order of Workers; Model each server's share of the model (m_j/M),
	// in the order of Servers.
	Data, Model []float64
	// Time is the predicted epoch time, in Cost's unit (eq. 3.1, C).
	Time float64
}

// machineType is the machines of one (speed, bandwidth), by index.
type machineType struct {
	m   Machine
	idx []int
}

// EpochTime is eqs. 3.1–3.4 on machines that differ, with d and m
// chosen best for the given roles (Figure 3.2's d* and m*, which
// TimeOn's proportional heuristic approximates). With worker i at speed
// σ_i and link β_i, w workers and the servers' links summing to Σβ_S,
// the servers' term of eq. 3.4 is least with m_j ∝ β_j, when every
// mini-batch waits τ = w/Σβ_S on them (in units of K); worker i then
// takes g_i = A/σ_i + K·max(τ, 1/β_i) for all the data, and the epoch
// (the slowest worker, eq. 3.1) is least with d_i ∝ 1/g_i:
//
//	C = 1 / Σ_i 1/g_i
//
// On machines of (1, 1) it is Cost.Time. It returns +Inf without a worker or
// a server.
func EpochTime(c Cost, ms []Machine, workers, servers []int) float64 {
	var bw float64
	for _, j := range servers {
		bw += ms[j].Bandwidth
	}
	if len(workers) == 0 || bw <= 0 {
		return math.Inf(1)
	}
	tau := float64(len(workers)) / bw
	var rate float64
	for _, i := range workers {
		rate += 1 / g(c, ms[i], tau)
	}
	return 1 / rate
}

// g is a worker's time for all the data when each mini-batch waits tau
// on the servers.
func g(c Cost, m Machine, tau float64) float64 {
	return c.A/m.Speed + c.K*math.Max(tau, 1/m.Bandwidth)
}

// SolveMIP solves Figure 3.2's problem for machines that differ (§3.2.3,
// used in §3.4.5) as a mixed-integer linear program, with GLPK's glpsol
// (the text uses Gurobi with quadratic constraints; GLPK takes linear
// ones only). Machines of one (speed, bandwidth) are interchangeable: an
// integer k_t says how many of type t work, the rest serve. The products
// of eq. 3.4 (d_i times the servers' w·m_j/b_ij) are linear once the
// servers' per-mini-batch time τ is fixed: for a given τ, EpochTime's
// best d makes the epoch 1/Σ_t k_t/g_t(τ), and the servers keep up with
// w workers when w ≤ τ·Σβ_S. So the program picks one of levels values
// of τ (binaries z_l, on a geometric grid from 1/Σβ to (N−1)/min β) and
// the k_t at that level:
//
//	maximise   Σ_l Σ_t k_lt / g_t(τ_l)                 (the workers' rate)
//	subject to Σ_l z_l = 1
//	           Σ_t (1 + τ_l·β_t)·k_lt ≤ τ_l·Σβ   ∀l    (w ≤ τ_l·Σβ_S)
//	           k_lt ≤ n_t·z_l,  z_l ≤ Σ_t k_lt ≤ (N−1)·z_l   ∀l, t
//
// A solution's true τ is at most its level's, so EpochTime of the
// answer is at most what the program predicts; the grid costs at most
// one level's step in τ, and the answer is then polished by moving one
// machine between the roles while that helps. It is reported with EpochTime's d and
// m. glpsol runs under ctx and limit; glpsol is its path ("" looks it up
// in PATH).
func SolveMIP(ctx context.Context, glpsol string, c Cost, ms []Machine, levels int, limit time.Duration) (*MIPSolution, error) {
	n := len(ms)
	if n < 2 {
		return nil, fmt.Errorf("cruise: %d machines: a job needs a worker and a server", n)
	}
	if levels < 1 {
		levels = DefaultLevels
	}
	var types []machineType
	var sumBW, minBW float64 = 0, math.Inf(1)
	for i, m := range ms {
		if m.Speed <= 0 || m.Bandwidth <= 0 {
			return nil, fmt.Errorf("cruise: machine %d has speed %g and bandwidth %g; both must be positive", i, m.Speed, m.Bandwidth)
		}
		sumBW += m.Bandwidth
		minBW = math.Min(minBW, m.Bandwidth)
		k := slices.IndexFunc(types, func(t machineType) bool { return t.m == m })
		if k < 0 {
			types = append(types, machineType{m: m})
			k = len(types) - 1
		}
		types[k].idx = append(types[k].idx, i)
	}
	lo, hi := 1/sumBW, float64(n-1)/minBW
	taus := make([]float64, levels)
	for l := range taus {
		taus[l] = lo * math.Pow(hi/lo, float64(l)/float64(max(levels-1, 1)))
	}

	var model bytes.Buffer
	fmt.Fprintf(&model, "param N := %d;\nset L := 1..%d;\nset T := 1..%d;\n", n, levels, len(types))
	model.WriteString("param n{T};\nparam v{L,T};\nparam w{L,T};\nparam cap{L};\n")
	model.WriteString(`var z{L} binary;
var k{l in L, t in T} integer >= 0, <= n[t];
maximize rate: sum{l in L, t in T} v[l,t]*k[l,t];
s.t. one: sum{l in L} z[l] = 1;
s.t. serve{l in L}: sum{t in T} w[l,t]*k[l,t] <= cap[l];
s.t. on{l in L, t in T}: k[l,t] <= n[t]*z[l];
s.t. work{l in L}: sum{t in T} k[l,t] >= z[l];
s.t. keep{l in L}: sum{t in T} k[l,t] <= (N-1)*z[l];
solve;
printf{l in L, t in T: k[l,t] > 0.5} "cruise-k %d %d\n", t, k[l,t];
data;
`)
	model.WriteString("param n :=")
	for t, ty := range types {
		fmt.Fprintf(&model, " %d %d", t+1, len(ty.idx))
	}
	model.WriteString(";\nparam v :=")
	for l, tau := range taus {
		for t, ty := range types {
			fmt.Fprintf(&model, "\n[%d,%d] %s", l+1, t+1, num(1/g(c, ty.m, tau)))
		}
	}
	model.WriteString(";\nparam w :=")
	for l, tau := range taus {
		for t, ty := range types {
			fmt.Fprintf(&model, "\n[%d,%d] %s", l+1, t+1, num(1+tau*ty.m.Bandwidth))
		}
	}
	model.WriteString(";\nparam cap :=")
	for l, tau := range taus {
		fmt.Fprintf(&model, "\n%d %s", l+1, num(tau*sumBW))
	}
	model.WriteString(";\nend;\n")

	out, err := runGLPSOL(ctx, glpsol, model.Bytes(), limit)
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(types))
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "cruise-k" {
			continue
		}
		t, errT := strconv.Atoi(f[1])
		k, errK := strconv.Atoi(f[2])
		if errT != nil || errK != nil || t < 1 || t > len(types) || k < 0 || k > len(types[t-1].idx) {
			return nil, fmt.Errorf("cruise: glpsol printed %q", sc.Text())
		}
		counts[t-1] += k
	}
	counts = polish(c, ms, types, counts)
	sol := &MIPSolution{}
	for t, ty := range types {
		sol.Workers = append(sol.Workers, ty.idx[:counts[t]]...)
		sol.Servers = append(sol.Servers, ty.idx[counts[t]:]...)
	}
	if len(sol.Workers) == 0 || len(sol.Servers) == 0 {
		return nil, fmt.Errorf("cruise: glpsol found no integer solution: %s", lastLines(string(out), 3))
	}
	slices.Sort(sol.Workers)
	slices.Sort(sol.Servers)
	sol.Time = EpochTime(c, ms, sol.Workers, sol.Servers)
	var bw float64
	for _, j := range sol.Servers {
		bw += ms[j].Bandwidth
	}
	tau := float64(len(sol.Workers)) / bw
	for _, i := range sol.Workers {
		sol.Data = append(sol.Data, sol.Time/g(c, ms[i], tau))
	}
	for _, j := range sol.Servers {
		sol.Model = append(sol.Model, ms[j].Bandwidth/bw)
	}
	return sol, nil
}

// polish moves one machine of a type between the roles while that
// shortens EpochTime: the grid of τ can leave the program's answer a
// machine from the best (on identical machines, eq. 3.5's w* ± 1).
func polish(c Cost, ms []Machine, types []machineType, counts []int) []int {
	time := func(counts []int) float64 {
		var wk, sv []int
		for t, ty := range types {
			wk = append(wk, ty.idx[:counts[t]]...)
			sv = append(sv, ty.idx[counts[t]:]...)
		}
		return EpochTime(c, ms, wk, sv)
	}
	best := time(counts)
	for improved := true; improved; {
		improved = false
		for t := range types {
			for _, d := range []int{-1, 1} {
				k := counts[t] + d
				if k < 0 || k > len(types[t].idx) {
					continue
				}
				counts[t] = k
				if e := time(counts); e < best*(1-1e-12) {
					best, improved = e, true
					continue
				}
				counts[t] -= d
			}
		}
	}
	return counts
}

// runGLPSOL runs a MathProg model (data included) through glpsol and
// returns what it printed; a model with no integer solution is an error.
// The temporary-file handling follows planner/dorm's solve.
func runGLPSOL(ctx context.Context, glpsol string, model []byte, limit time.Duration) ([]byte, error) {
	if glpsol == "" {
		p, err := exec.LookPath("glpsol")
		if err != nil {
			return nil, ErrNoSolver
		}
		glpsol = p
	}
	dir, err := os.MkdirTemp("", "caravan-cruise-")
	if err != nil {
		return nil, fmt.Errorf("cruise: temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fig32.mod")
	if err := os.WriteFile(path, model, 0o600); err != nil {
		return nil, fmt.Errorf("cruise: write model: %w", err)
	}
	args := []string{"--math", path}
	if limit >= time.Second {
		args = append(args, "--tmlim", strconv.Itoa(int(limit/time.Second)))
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit+5*time.Second)
		defer cancel()
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, glpsol, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNoSolver
		}
		return nil, fmt.Errorf("cruise: glpsol: %w: %s", err, lastLines(out.String(), 5))
	}
	if !strings.Contains(out.String(), "INTEGER OPTIMAL SOLUTION FOUND") {
		return nil, fmt.Errorf("cruise: glpsol found no optimal integer solution: %s", lastLines(out.String(), 3))
	}
	return out.Bytes(), nil
}

// num writes a float as MathProg reads it.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 12, 64) }

// lastLines is the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
