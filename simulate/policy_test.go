package simulate

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/shoenig/test/must"
)

func TestParsePolicy(t *testing.T) {
	cases := []struct {
		in   string
		want PolicySpec
		err  string
	}{
		{in: "drf", want: PolicySpec{Name: "drf"}},
		{in: "specon:base=drf", want: PolicySpec{Name: "specon", Options: map[string]string{"base": "drf"}}},
		{in: "specon:interval=5s:alpha=0.02", want: PolicySpec{Name: "specon", Options: map[string]string{"alpha": "0.02", "interval": "5s"}}},
		{in: "", err: "no name"},
		{in: ":base=drf", err: "no name"},
		{in: "specon:", err: `option "" is not key=value`},
		{in: "specon:base", err: `option "base" is not key=value`},
		{in: "specon:base=", err: `option "base=" is not key=value`},
		{in: "specon:=drf", err: `option "=drf" is not key=value`},
		{in: "specon:base=drf:base=fifo", err: `option "base" given twice`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePolicy(tc.in)
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

// TestPolicySpec_String: the report's name lists the options in key order
// and parses back to the same spec.
func TestPolicySpec_String(t *testing.T) {
	spec := PolicySpec{Name: "specon", Options: map[string]string{"interval": "5s", "base": "drf", "alpha": "0.02"}}
	must.Eq(t, "specon:alpha=0.02:base=drf:interval=5s", spec.String())
	back, err := ParsePolicy(spec.String())
	must.NoError(t, err)
	must.Eq(t, spec, back)
	must.Eq(t, "drf", PolicySpec{Name: "drf"}.String())
}

// TestFixedSize: SpeCon declares that it runs the jobs at their fixed
// request when its base does, so that the simulator runs the same jobs
// under specon and fifo.
func TestFixedSize(t *testing.T) {
	cases := []struct {
		name    string
		options map[string]string
		want    bool
	}{
		{"fifo", nil, true},
		{"tetris", nil, true},
		{"drf", nil, false},
		{"specon", nil, true},
		{"specon", map[string]string{"base": "fifo"}, true},
		{"specon", map[string]string{"base": "tetris", "alpha": "0.02"}, true},
		{"roundrobin", nil, true},
		{"specon", map[string]string{"base": "roundrobin"}, true},
		{"specon", map[string]string{"base": "drf"}, false},
		{"specon", map[string]string{"alpha": "0.02"}, true},
	}
	for _, tc := range cases {
		t.Run(PolicySpec{Name: tc.name, Options: tc.options}.String(), func(t *testing.T) {
			alg, ok := Policy(tc.name)
			must.True(t, ok)
			must.NoError(t, passConfig(alg, tc.options))
			must.Eq(t, tc.want, planner.CapabilitiesOf(alg).FixedSize)
		})
	}
}
