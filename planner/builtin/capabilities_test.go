package builtin

import (
	"maps"
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/shoenig/test/must"
)

// TestAlgorithms_Capabilities: every built-in declares what it reads and
// does, under its defaults and under the options its declaration depends
// on, and the declaration holds no estimator the server does not keep.
func TestAlgorithms_Capabilities(t *testing.T) {
	const (
		loss     = planner.EstimatorLoss
		speed    = planner.EstimatorSpeed
		subtasks = planner.EstimatorSubtasks
		progress = planner.EstimatorProgress
		usage    = planner.EstimatorUsage
		service  = planner.EstimatorAttainedService
		goodput  = planner.EstimatorGoodput
	)
	reads := func(e ...planner.Estimator) []planner.Estimator { return e }
	cases := []struct {
		name    string
		options map[string]string
		want    planner.Capabilities
	}{
		{"optimus", nil, planner.Capabilities{Reads: reads(loss, speed), SpeedModels: true}},
		{"optimus-relative", nil, planner.Capabilities{Reads: reads(loss, speed), SpeedModels: true}},
		{"drf", nil, planner.Capabilities{}},
		{"drf", map[string]string{"split": "cruise"}, planner.Capabilities{Reads: reads(subtasks)}},
		{"tetris", nil, planner.Capabilities{Reads: reads(loss, speed), FixedSize: true}},
		{"fifo", nil, planner.Capabilities{FixedSize: true}},
		{"roundrobin", nil, planner.Capabilities{FixedSize: true}},
		{"cruise", nil, planner.Capabilities{Reads: reads(subtasks)}},
		{"harmony", nil, planner.Capabilities{Reads: reads(subtasks)}},
		{"dorm", nil, planner.Capabilities{}},
		{"dlrover", nil, planner.Capabilities{Reads: reads(usage)}},
		{"tiresias", nil, planner.Capabilities{Reads: reads(service), FixedSize: true}},
		{"pollux", nil, planner.Capabilities{Reads: reads(goodput), ChoosesBatch: true}},
		{"gavel", nil, planner.Capabilities{Reads: reads(goodput), FixedSize: true, GPUTypes: true}},
		{"gavel", map[string]string{"round": "60s"}, planner.Capabilities{Reads: reads(goodput), FixedSize: true, GPUTypes: true}},
		{"goodput-las", nil, planner.Capabilities{Reads: reads(service, goodput), ChoosesBatch: true}},
		{"sia", nil, planner.Capabilities{Reads: reads(goodput), ChoosesBatch: true, GPUTypes: true}},
		{"sia", map[string]string{"service_scale": "1h"}, planner.Capabilities{Reads: reads(goodput, service), ChoosesBatch: true, GPUTypes: true}},
		{"sia-las", nil, planner.Capabilities{Reads: reads(goodput, service), ChoosesBatch: true, GPUTypes: true}},
		{"specon", nil, planner.Capabilities{Reads: reads(progress), FixedSize: true}},
		{"specon", map[string]string{"base": "tetris", "alpha": "0.02"}, planner.Capabilities{Reads: reads(loss, speed, progress), FixedSize: true}},
		{"specon", map[string]string{"base": "roundrobin"}, planner.Capabilities{Reads: reads(progress), FixedSize: true}},
		{"specon", map[string]string{"base": "drf"}, planner.Capabilities{Reads: reads(progress)}},
		{"specon", map[string]string{"base": "optimus"}, planner.Capabilities{Reads: reads(loss, speed, progress), SpeedModels: true}},
		{"specon", map[string]string{"base": "pollux"}, planner.Capabilities{Reads: reads(goodput, progress), ChoosesBatch: true}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.name] = true
		t.Run(tc.name+optionsSuffix(tc.options), func(t *testing.T) {
			alg := Algorithms[tc.name]()
			_, ok := alg.(planner.Describer)
			must.True(t, ok, must.Sprint("every built-in declares its capabilities"))
			if tc.options != nil {
				must.NoError(t, alg.(planner.Configurable).SetConfig(tc.options))
			}
			got := planner.CapabilitiesOf(alg)
			must.Eq(t, tc.want, got)
			for _, e := range got.Reads {
				must.SliceContains(t, planner.Estimators, e)
			}
			if md, ok := alg.(planner.ModelDriven); ok {
				must.Eq(t, md.SpeedModels(), got.SpeedModels, must.Sprint("ModelDriven and the declaration agree"))
			}
		})
	}
	must.Eq(t, Names(), slices.Sorted(maps.Keys(seen)), must.Sprint("a case for every built-in"))
}

// TestAlgorithms_CapabilitiesFollowOptions: a declaration that depends on
// the options changes back when they are set again.
func TestAlgorithms_CapabilitiesFollowOptions(t *testing.T) {
	alg := Algorithms["specon"]()
	conf := alg.(planner.Configurable)
	must.NoError(t, conf.SetConfig(map[string]string{"base": "pollux"}))
	must.True(t, planner.CapabilitiesOf(alg).ChoosesBatch)
	must.False(t, planner.CapabilitiesOf(alg).FixedSize)
	must.NoError(t, conf.SetConfig(nil))
	must.False(t, planner.CapabilitiesOf(alg).ChoosesBatch)
	must.True(t, planner.CapabilitiesOf(alg).FixedSize)
}

func optionsSuffix(options map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(options)) {
		s += ":" + k + "=" + options[k]
	}
	return s
}
