package optimus

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

func TestAssignParameters_Example(t *testing.T) {
	got := AssignParameters([]Block{{"fc", 100}, {"conv1", 10}, {"conv2", 10}}, 2)
	// The average load is 60, so fc is cut in two halves of 50.
	must.Eq(t, [][]Slice{
		{{Block: "fc", Offset: 0, Size: 50}, {Block: "conv1", Offset: 0, Size: 10}},
		{{Block: "fc", Offset: 50, Size: 50}, {Block: "conv2", Offset: 0, Size: 10}},
	}, got)
}

// TestAssignParameters_Balance checks on random models that the slices of
// each block tile it exactly and that no server's load exceeds the average
// by more than one slice.
func TestAssignParameters_Balance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for range 200 {
		var blocks []Block
		var total int64
		for i := range 1 + rng.IntN(40) {
			b := Block{Name: string(rune('a'+i%26)) + string(rune('0'+i/26)), Size: 1 + rng.Int64N(1<<20)}
			if rng.IntN(10) == 0 {
				b.Size *= 64 // a few huge blocks, like embeddings
			}
			blocks = append(blocks, b)
			total += b.Size
		}
		servers := 1 + rng.IntN(16)
		got := AssignParameters(blocks, servers)
		must.SliceLen(t, servers, got)

		byBlock := map[string][]Slice{}
		var maxLoad, maxSlice int64
		for _, s := range got {
			var load int64
			for _, sl := range s {
				byBlock[sl.Block] = append(byBlock[sl.Block], sl)
				load += sl.Size
				maxSlice = max(maxSlice, sl.Size)
			}
			maxLoad = max(maxLoad, load)
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
		avg := (total + int64(servers) - 1) / int64(servers)
		must.LessEq(t, avg+maxSlice, maxLoad)
	}
}
