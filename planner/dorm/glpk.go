package dorm

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
	"strconv"
	"strings"
	"time"
)

// Status is how a solve ended.
type Status string

const (
	// StatusOptimal: glpsol proved the solution optimal within MIPGap.
	StatusOptimal Status = "optimal"
	// StatusFeasible: the time limit stopped the search; the solution is
	// the best incumbent.
	StatusFeasible Status = "feasible"
	// StatusInfeasible: P2 has no integer solution.
	StatusInfeasible Status = "infeasible"
	// StatusNoSolution: the time limit stopped the search before any
	// integer solution was found, or glpsol was killed at the limit.
	StatusNoSolution Status = "no solution"
)

// MIPGap is the relative gap at which glpsol stops with an integer
// solution it calls optimal: 0.1% of the utilisation. Without it glpsol
// spends its whole time limit on small instances of identical nodes, whose
// symmetric assignments branch-and-bound cannot tell apart.
const MIPGap = 1e-3

// solution is glpsol's answer: the columns' values in the order the model
// declared them.
type solution struct {
	status Status
	obj    float64
	cols   []float64
}

// solve writes the model to a temporary directory, runs glpsol on it with
// the time limit and reads the MIP solution back. With a limit of a second
// or more glpsol stops itself after ⌊limit⌋ seconds and writes its best
// incumbent, and the process is killed 5 s later if it has not exited;
// with a shorter limit the process is killed at the limit (no incumbent).
func solve(glpsol string, lp []byte, ncols int, limit time.Duration) (*solution, error) {
	dir, err := os.MkdirTemp("", "caravan-dorm-")
	if err != nil {
		return nil, fmt.Errorf("dorm: temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	model, out := filepath.Join(dir, "p2.lp"), filepath.Join(dir, "p2.sol")
	if err := os.WriteFile(model, lp, 0o600); err != nil {
		return nil, fmt.Errorf("dorm: write model: %w", err)
	}
	args := []string{"--lp", model, "-w", out, "--mipgap", strconv.FormatFloat(MIPGap, 'g', -1, 64)}
	deadline := limit
	if limit >= time.Second {
		args = append(args, "--tmlim", strconv.Itoa(int(limit/time.Second)))
		deadline = limit + 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, glpsol, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return &solution{status: StatusNoSolution}, nil
		}
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNoSolver
		}
		return nil, fmt.Errorf("dorm: glpsol: %w: %s", err, lastLines(stdout.String(), 5))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("dorm: glpsol wrote no solution: %w: %s", err, lastLines(stdout.String(), 5))
	}
	sol, err := parseSolution(b, ncols)
	if err != nil {
		return nil, fmt.Errorf("dorm: glpsol's solution: %w", err)
	}
	// glpsol marks a solution within the gap tolerance feasible, as it
	// does one the time limit cut short; its log tells them apart.
	if sol.status == StatusFeasible && strings.Contains(stdout.String(), "MIP GAP TOLERANCE REACHED") {
		sol.status = StatusOptimal
	}
	return sol, nil
}

// parseSolution reads GLPK's plain-text MIP solution (glp_write_mip):
// "s mip ROWS COLS STATUS OBJ" then "j COL VALUE" lines.
func parseSolution(b []byte, ncols int) (*solution, error) {
	sol := &solution{cols: make([]float64, ncols)}
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "s":
			if len(f) != 6 || f[1] != "mip" {
				return nil, fmt.Errorf("bad status line %q", sc.Text())
			}
			if n, err := strconv.Atoi(f[3]); err != nil || n != ncols {
				return nil, fmt.Errorf("%s columns, the model has %d", f[3], ncols)
			}
			switch f[4] {
			case "o":
				sol.status = StatusOptimal
			case "f":
				sol.status = StatusFeasible
			case "n":
				sol.status = StatusInfeasible
			default:
				sol.status = StatusNoSolution
			}
			v, err := strconv.ParseFloat(f[5], 64)
			if err != nil {
				return nil, fmt.Errorf("objective %q: %w", f[5], err)
			}
			sol.obj, seen = v, true
		case "j":
			if len(f) != 3 {
				return nil, fmt.Errorf("bad column line %q", sc.Text())
			}
			k, err := strconv.Atoi(f[1])
			if err != nil || k < 1 || k > ncols {
				return nil, fmt.Errorf("bad column %q", f[1])
			}
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return nil, fmt.Errorf("column %d value %q: %w", k, f[2], err)
			}
			sol.cols[k-1] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, errors.New("no status line")
	}
	return sol, nil
}

// round returns an integer column's value.
func round(v float64) int { return int(math.Round(v)) }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}
