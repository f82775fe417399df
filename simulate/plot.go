package simulate

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"github.com/caravan-sched/caravan/drivers/sim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlots draws, into dir: jct_cdf.png (the distribution of job
// completion times per policy), gpu_util.png (the share of the cluster's
// GPUs held by jobs over time, per policy) and gpu_alloc_<policy>.png (GPUs
// held by each job over time, one row per job in arrival order).
func WritePlots(dir string, results []*Result) error {
	if err := jctCDF(results).Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "jct_cdf.png")); err != nil {
		return err
	}
	if err := utilization(results).Save(10*vg.Inch, 4*vg.Inch, filepath.Join(dir, "gpu_util.png")); err != nil {
		return err
	}
	for _, r := range results {
		name := filepath.Join(dir, "gpu_alloc_"+r.Policy+".png")
		if err := allocation(r).Save(10*vg.Inch, 6*vg.Inch, name); err != nil {
			return err
		}
	}
	return nil
}

func jctCDF(results []*Result) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Job completion time"
	p.X.Label.Text = "JCT (s, log scale)"
	p.Y.Label.Text = "fraction of jobs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, r := range results {
		var jcts []float64
		for _, j := range r.Jobs {
			if j.Finish >= 0 {
				jcts = append(jcts, max(j.Finish-j.Arrival, 1))
			}
		}
		slices.Sort(jcts)
		pts := make(plotter.XYs, len(jcts))
		for k, v := range jcts {
			pts[k] = plotter.XY{X: v, Y: float64(k+1) / float64(len(jcts))}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			continue
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (avg %.0fs)", r.Policy, r.Summary.AvgJCT), l)
	}
	return p
}

func utilization(results []*Result) *plot.Plot {
	p := plot.New()
	p.Title.Text = "GPUs held by jobs"
	p.X.Label.Text = "time (hours)"
	p.Y.Label.Text = "share of the cluster's GPUs"
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Legend.Top = true
	for i, r := range results {
		var pts plotter.XYs
		for k, u := range r.Usage {
			if k > 0 {
				pts = append(pts, plotter.XY{X: u.Time / 3600, Y: pts[len(pts)-1].Y})
			}
			pts = append(pts, plotter.XY{X: u.Time / 3600, Y: float64(u.GPUs) / float64(max(r.TotalGPUs, 1))})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			continue
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%.0f%%)", r.Policy, 100*r.Summary.GPUUtil), l)
	}
	return p
}

// allocGrid is GPUs held by job (row) over time (column).
type allocGrid struct {
	cols, rows int
	step       float64
	z          []float64
}

func (g *allocGrid) Dims() (int, int)   { return g.cols, g.rows }
func (g *allocGrid) Z(c, r int) float64 { return g.z[r*g.cols+c] }
func (g *allocGrid) X(c int) float64    { return (float64(c) + 0.5) * g.step / 3600 }
func (g *allocGrid) Y(r int) float64    { return float64(r) }

func allocation(r *Result) *plot.Plot {
	p := plot.New()
	p.Title.Text = "GPUs per job under " + r.Policy
	p.X.Label.Text = "time (hours)"
	p.Y.Label.Text = "job (arrival order)"
	// At most maxRows rows: beyond that, a row sums consecutive jobs.
	const maxRows = 400
	rows := min(len(r.Jobs), maxRows)
	if rows < len(r.Jobs) {
		p.Y.Label.Text = fmt.Sprintf("jobs (arrival order, %d per row)", (len(r.Jobs)+rows-1)/rows)
	}
	end := 0.0
	for _, j := range r.Jobs {
		end = max(end, j.Finish)
	}
	if len(r.Jobs) == 0 || end <= 0 {
		return p
	}
	row := make(map[string]int, len(r.Jobs))
	for k, j := range r.Jobs {
		row[j.JobID] = k * rows / len(r.Jobs)
	}
	g := &allocGrid{cols: 300, rows: rows, step: end / 300}
	g.z = make([]float64, g.cols*g.rows)
	// Each change holds until the job's next change; a cell sums the jobs
	// of its row, each at its GPUs at the cell's start.
	last := map[string]sim.AllocChange{}
	fill := func(a sim.AllocChange, until float64) {
		for c := int(math.Ceil(a.Time / g.step)); c < g.cols && float64(c)*g.step < until; c++ {
			g.z[row[a.JobID]*g.cols+c] += float64(a.GPUs)
		}
	}
	for _, a := range r.Allocs {
		if prev, ok := last[a.JobID]; ok {
			fill(prev, a.Time)
		}
		last[a.JobID] = a
	}
	for _, a := range last {
		fill(a, end)
	}
	hm := plotter.NewHeatMap(g, ramp(16))
	hm.Min = 0
	p.Add(hm)
	return p
}

// ramp is a palette from white (no GPUs) to dark blue (the most GPUs).
type ramp int

func (r ramp) Colors() []color.Color {
	out := make([]color.Color, r)
	for i := range out {
		f := float64(i) / float64(max(int(r)-1, 1))
		out[i] = color.RGBA{R: uint8(255 - f*(255-8)), G: uint8(255 - f*(255-48)), B: uint8(255 - f*(255-107)), A: 255}
	}
	return out
}
