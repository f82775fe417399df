package server

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func TestNewestStep(t *testing.T) {
	cases := []struct {
		name    string
		samples []structs.Sample
		want    int64
	}{
		{"one", []structs.Sample{{Step: 7, Time: 1}}, 7},
		{
			// A generation that resumed from an older checkpoint: the step
			// it trains at, not the highest the last one reported.
			"resumed behind the last report",
			[]structs.Sample{{Step: 5720, Time: 10}, {Step: 1488, Time: 20}, {Step: 1640, Time: 30}},
			1640,
		},
		{
			"delivered out of order",
			[]structs.Sample{{Step: 100, Time: 10}, {Step: 120, Time: 30}, {Step: 110, Time: 20}},
			120,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, newestStep(tc.samples))
		})
	}
}
