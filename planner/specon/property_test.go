package specon

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPlan_Properties plans random clusters of one-node jobs over rounds
// 30 s apart, each round's decision becoming the next round's current
// placements and every job reporting its loss curve (some converging
// fast, some slowly, some noisy) every 10 s until it finishes. In every round: the decision
// keeps CheckDecision's rules (no node over capacity), is the same for the
// request in any job order, and SpeCon moves each job at most once by
// Algorithm 2 and at most once by Algorithm 3.
func TestPlan_Properties(t *testing.T) {
	for _, base := range []string{"fifo", "drf"} {
		t.Run(base, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(18, 4))
			moves := map[string]int{}
			for trial := range 60 {
				f := newFixture(t, 2+rng.IntN(6), 8000)
				type curve struct {
					rate, noise float64
					end         int
				}
				curves := map[string]curve{}
				for k := range 4 + rng.IntN(16) {
					id := fmt.Sprintf("j%d", k)
					f.job(id, "", 500*(1+rng.IntN(6)), nil, "")
					curves[id] = curve{rate: 0.05 + 2*rng.Float64(), noise: []float64{0, 0, 0.002, 0.02}[rng.IntN(4)], end: 15 + rng.IntN(40)}
				}
				start := now
				moved := map[string][2]int{}
				for round := range 60 {
					at := start + int64(round)*int64(30*time.Second)
					f.h.Jobs = slices.DeleteFunc(f.h.Jobs, func(j *planner.Job) bool { return curves[j.Job.ID].end == round })
					for _, j := range f.h.Jobs {
						c := curves[j.Job.ID]
						for s := range 3 {
							pt := at - int64(2-s)*int64(10*time.Second)
							x := float64(pt-start) / float64(30*time.Second)
							loss := 0.1 + 1/(1+c.rate*x) + c.noise*rng.NormFloat64()
							j.Progress = append(j.Progress, planner.ProgressPoint{Time: pt, Loss: max(loss, 0.01)})
						}
					}
					s, err := NewWithOptions(testBases, Options{Base: base})
					must.NoError(t, err)
					req := f.h.Request()
					req.Now = at
					dec, err := s.Plan(req)
					must.NoError(t, err)
					must.NoError(t, planner.CheckDecision(req, dec), must.Sprintf("trial %d round %d", trial, round))

					shuffled := *req
					shuffled.Jobs = slices.Clone(req.Jobs)
					rng.Shuffle(len(shuffled.Jobs), func(a, b int) { shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a] })
					again, err := s.Plan(&shuffled)
					must.NoError(t, err)
					must.Eq(t, dec, again, must.Sprintf("trial %d round %d: not deterministic", trial, round))

					byID := map[string]*structs.Placement{}
					for _, p := range dec.Placements {
						byID[p.JobID] = p
					}
					for _, j := range f.h.Jobs {
						p := byID[j.Job.ID]
						if j.Current != nil && !j.Current.Paused() && !p.Paused() && !p.SameTasks(j.Current) {
							m := moved[j.Job.ID]
							switch {
							case strings.Contains(p.Reason, "Algorithm 2)"):
								m[0]++
								moves["algorithm 2"]++
							case strings.Contains(p.Reason, "Algorithm 3)"):
								m[1]++
								moves["algorithm 3"]++
							}
							must.LessEq(t, 1, m[0], must.Sprintf("trial %d round %d: %s migrated twice: %s", trial, round, j.Job.ID, p.Reason))
							must.LessEq(t, 1, m[1], must.Sprintf("trial %d round %d: %s rebalanced twice: %s", trial, round, j.Job.ID, p.Reason))
							moved[j.Job.ID] = m
						}
						j.Current = p
					}
				}
			}
			t.Logf("%s: %v", base, moves)
			must.Positive(t, moves["algorithm 2"], must.Sprint("the instances should make Algorithm 2 migrate"))
			must.Positive(t, moves["algorithm 3"], must.Sprint("the instances should make Algorithm 3 rebalance"))
		})
	}
}
