package optimus

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/shoenig/test/must"
)

// TestAssignParameters_Table3 runs PAA on ResNet-50 at 10 servers (Fig.
// 21's set-up; MXNet's 247 requests in Table 3 are what slicing its 10
// blocks of over 10^6 parameters 10 ways gives). Table 3: PAA's servers
// differ by 0.1M parameters and 1 request, 157 in all, slicing no block.
func TestAssignParameters_Table3(t *testing.T) {
	var blocks []Block
	for _, b := range sim.ResNet50Blocks() {
		blocks = append(blocks, Block{Name: b.Name, Size: b.Size})
	}
	must.SliceLen(t, 157, blocks)
	paa := BalanceOf(AssignParameters(blocks, 10, 0))
	must.Eq(t, 157, paa.Requests, must.Sprint("PAA slices no block"))
	must.LessEq(t, 1, paa.RequestSpread)
	must.LessEq(t, 150_000, paa.SizeSpread)
	t.Logf("PAA %+v", paa)
}

func TestAssignParameters_Rules(t *testing.T) {
	cases := []struct {
		name   string
		blocks []Block
		want   [][]Slice
	}{{
		// avg 60: fc (100) is sliced into 60 and 40, each to the server
		// holding least; conv1 (10) then fits only server 1 (room 20).
		name:   "slice and best fit",
		blocks: []Block{{"conv1", 10}, {"fc", 100}, {"conv2", 10}},
		want: [][]Slice{
			{{Block: "fc", Size: 60}},
			{{Block: "fc", Offset: 60, Size: 40}, {Block: "conv1", Size: 10}, {Block: "conv2", Size: 10}},
		},
	}, {
		// avg 500, 1% = 5: b fits only server 1, c fits neither and goes
		// to the one holding least (1); the 4s are very small and go to
		// the server with the fewest requests (0), whatever it holds.
		name:   "very small blocks by requests",
		blocks: []Block{{"a", 400}, {"b", 300}, {"c", 288}, {"d", 4}, {"e", 4}},
		want: [][]Slice{
			{{Block: "a", Size: 400}, {Block: "d", Size: 4}, {Block: "e", Size: 4}},
			{{Block: "b", Size: 300}, {Block: "c", Size: 288}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, AssignParameters(tc.blocks, 2, 0))
		})
	}
}

// TestAssignParameters_Tiles checks on random models that the slices of
// each block tile it exactly and that no slice exceeds the average load.
func TestAssignParameters_Tiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for range 200 {
		var blocks []Block
		var total int64
		for i := range 1 + rng.IntN(40) {
			b := Block{Name: fmt.Sprint("b", i), Size: 1 + rng.Int64N(1<<20)}
			if rng.IntN(10) == 0 {
				b.Size *= 64 // a few huge blocks, like embeddings
			}
			blocks = append(blocks, b)
			total += b.Size
		}
		servers := 1 + rng.IntN(16)
		got := AssignParameters(blocks, servers, 0)
		must.SliceLen(t, servers, got)
		byBlock := map[string][]Slice{}
		for _, s := range got {
			for _, sl := range s {
				byBlock[sl.Block] = append(byBlock[sl.Block], sl)
				must.LessEq(t, total/int64(servers)+1, sl.Size)
			}
		}
		for _, b := range blocks {
			parts := byBlock[b.Name]
			slices.SortFunc(parts, func(x, y Slice) int { return cmp.Compare(x.Offset, y.Offset) })
			var next int64
			for _, p := range parts {
				must.Eq(t, next, p.Offset, must.Sprintf("block %s: slices must tile it", b.Name))
				next += p.Size
			}
			must.Eq(t, b.Size, next)
		}
	}
}
