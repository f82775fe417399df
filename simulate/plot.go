package simulate

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/caravan-sched/caravan/drivers/sim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WritePlots draws, into dir: jct_cdf.png (the distribution of job
// completion times per policy), gpu_util.png (the share of the cluster's
// GPUs held by jobs over time, one panel per policy, smoothed over a
// hundredth of the longest run) and gpu_alloc_<policy>.png (GPUs held by
// each job over time, one row per job in arrival order, with a colour
// scale).
func WritePlots(dir string, results []*Result) error {
	if err := jctCDF(results).Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "jct_cdf.png")); err != nil {
		return err
	}
	if err := savePNG(filepath.Join(dir, "gpu_util.png"), 10*vg.Inch, vg.Length(max(len(results), 1))*2*vg.Inch, func(dc draw.Canvas) error {
		utilization(results, dc)
		return nil
	}); err != nil {
		return err
	}
	for _, r := range results {
		name := filepath.Join(dir, "gpu_alloc_"+r.Policy+".png")
		if err := savePNG(name, 10*vg.Inch, 6*vg.Inch, func(dc draw.Canvas) error { return allocation(r, dc) }); err != nil {
			return err
		}
	}
	return nil
}

// savePNG draws a w × h image with paint and writes it to file as PNG.
func savePNG(file string, w, h vg.Length, paint func(draw.Canvas) error) error {
	img := vgimg.New(w, h)
	if err := paint(draw.New(img)); err != nil {
		return fmt.Errorf("draw %s: %w", file, err)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	return f.Close()
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

// utilization draws one panel per policy on dc: the share of the
// cluster's GPUs jobs held, as it stepped (light) and as a moving average
// over a hundredth of the longest run (the policy's colour).
func utilization(results []*Result, dc draw.Canvas) {
	end := 0.0
	for _, r := range results {
		if n := len(r.Usage); n > 0 {
			end = max(end, r.Usage[n-1].Time)
		}
	}
	const points = 500
	window := max(end/100, 1)
	var plots [][]*plot.Plot
	for i, r := range results {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: GPUs held by jobs, %.0f%% on average", r.Policy, 100*r.Summary.GPUUtil)
		p.Y.Label.Text = "share of GPUs"
		p.Y.Min, p.Y.Max = 0, 1.05
		p.X.Min, p.X.Max = 0, end/3600
		if i == len(results)-1 {
			p.X.Label.Text = "time (hours)"
		}
		raw, smooth := utilSeries(r, end, points, window)
		if len(raw) > 0 {
			if l, err := plotter.NewLine(raw); err == nil {
				l.Color = color.Gray{Y: 200}
				p.Add(l)
			}
			if l, err := plotter.NewLine(smooth); err == nil {
				l.Color = plotutil.Color(i)
				l.Width = vg.Points(1.5)
				p.Add(l)
			}
		}
		plots = append(plots, []*plot.Plot{p})
	}
	if len(plots) == 0 {
		return
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
}

// utilSeries samples a run's share of GPUs held at points instants up to
// end, and its moving average over window seconds (trailing), in hours.
func utilSeries(r *Result, end float64, points int, window float64) (raw, smooth plotter.XYs) {
	if len(r.Usage) == 0 || end <= 0 {
		return nil, nil
	}
	step := end / float64(points)
	k := 0
	vals := make([]float64, points+1)
	for i := range vals {
		t := float64(i) * step
		for k+1 < len(r.Usage) && r.Usage[k+1].Time <= t {
			k++
		}
		if r.Usage[k].Time <= t {
			vals[i] = float64(r.Usage[k].GPUs) / float64(max(r.TotalGPUs, 1))
		}
		raw = append(raw, plotter.XY{X: t / 3600, Y: vals[i]})
	}
	n := max(int(window/step), 1)
	sum := 0.0
	for i, v := range vals {
		sum += v
		if i >= n {
			sum -= vals[i-n]
		}
		smooth = append(smooth, plotter.XY{X: float64(i) * step / 3600, Y: sum / float64(min(i+1, n))})
	}
	return raw, smooth
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

// allocation draws on dc the GPUs each job of a run held over time, one
// row per job (or per group of jobs, beyond 400), white for none, and a
// colour scale beside it.
func allocation(r *Result, dc draw.Canvas) error {
	p := plot.New()
	p.Title.Text = "GPUs per job under " + r.Policy
	p.X.Label.Text = "time (hours)"
	p.Y.Label.Text = "job (arrival order)"
	scale := draw.Crop(dc, dc.Max.X-dc.Min.X-1.1*vg.Inch, 0, 0.4*vg.Inch, -0.3*vg.Inch)
	defer p.Draw(draw.Crop(dc, 0, -1.2*vg.Inch, 0, 0))
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
		return nil
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
	most := max(slices.Max(g.z), 1)
	// White for no GPUs to dark blue for the most, interpolated in CIELAB
	// (NewLuminance takes its colours darkest first).
	dark, err := moreland.NewLuminance([]color.Color{color.RGBA{R: 8, G: 48, B: 107, A: 255}, color.White})
	if err != nil {
		return err
	}
	cm := palette.Reverse(dark)
	cm.SetMin(0)
	cm.SetMax(most)
	hm := plotter.NewHeatMap(g, cm.Palette(16))
	hm.Min, hm.Max = 0, most
	p.Add(hm)

	bar := plot.New()
	bar.Title.Text = "GPUs"
	bar.HideX()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	bar.Draw(scale)
	return nil
}
