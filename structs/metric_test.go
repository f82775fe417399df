package structs

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
)

func TestPlacementMetric_String(t *testing.T) {
	cases := []struct {
		name string
		m    *PlacementMetric
		want string
	}{
		{
			name: "filtered",
			m: &PlacementMetric{
				Minimum: Shape{Workers: 1}, Role: RoleWorker, NodesEvaluated: 4,
				ConstraintFiltered: map[string]int{"device nvidia/gpu: ${device.attr.memory} >= 32 GiB": 4},
			},
			want: "waiting for capacity: the minimum of 0 ps and 1 worker does not fit: no node has room for a worker; 4 nodes evaluated; " +
				"device nvidia/gpu: ${device.attr.memory} >= 32 GiB filtered 4 of 4 nodes",
		},
		{
			name: "sorted by count, then name",
			m: &PlacementMetric{
				Minimum: Shape{PS: 1, Workers: 4}, Placed: Shape{PS: 1, Workers: 2}, Role: RoleWorker, NodesEvaluated: 6,
				ConstraintFiltered: map[string]int{"distinct_hosts": 2, "${attr.kernel.name} = linux": 1},
				DimensionExhausted: map[string]int{"memory": 1, "cpu": 1, "gpu": 1},
			},
			want: "waiting for capacity: the minimum of 1 ps and 4 workers does not fit: room for 1 ps and 2 workers, no node has room for another worker; " +
				"6 nodes evaluated; distinct_hosts filtered 2 of 6 nodes; ${attr.kernel.name} = linux filtered 1 of 6 nodes; " +
				"cpu exhausted on 1 node; gpu exhausted on 1 node; memory exhausted on 1 node",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, tc.m.String())
		})
	}
}

func TestPlacementMetric_CopyAndEncoding(t *testing.T) {
	p := &Placement{JobID: "a", Reason: "r", Metric: &PlacementMetric{
		Minimum: Shape{Workers: 1}, Role: RoleWorker, NodesEvaluated: 2,
		DimensionExhausted: map[string]int{"gpu": 2},
	}}
	c := p.Copy()
	must.Eq(t, p, c)
	c.Metric.DimensionExhausted["gpu"] = 1
	must.Eq(t, 2, p.Metric.DimensionExhausted["gpu"])
	must.Nil(t, (&Placement{JobID: "a"}).Copy().Metric)

	var buf bytes.Buffer
	must.NoError(t, codec.NewEncoder(&buf, MsgpackHandle).Encode(p))
	var back Placement
	must.NoError(t, codec.NewDecoder(&buf, MsgpackHandle).Decode(&back))
	must.Eq(t, p, &back)

	// A placement without a metric encodes as it did before there was one.
	out, err := json.Marshal(&Placement{JobID: "a"})
	must.NoError(t, err)
	must.StrNotContains(t, string(out), "Metric")
}
