package optimus

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/planner/internal/pq"
)

// Block is a parameter block of a model, such as one layer's weights, of
// Size bytes.
type Block struct {
	Name string
	Size int64
}

// Slice is a contiguous part of a block, assigned to one parameter server.
type Slice struct {
	Block  string
	Offset int64
	Size   int64
}

// AssignParameters splits a model's parameter blocks across servers with the
// parameter assignment algorithm of Optimus §5.3 (PAA), which balances both
// the bytes each server holds and the number of update requests it serves:
// blocks larger than the average load per server are cut into equal slices
// no larger than that average, then slices, largest first, go to the server
// with the least bytes so far, ties to the one with fewer slices. It returns
// the slices of each server; every byte of every block is assigned exactly
// once. servers must be at least 1.
func AssignParameters(blocks []Block, servers int) [][]Slice {
	var total int64
	for _, b := range blocks {
		total += b.Size
	}
	avg := max((total+int64(servers)-1)/int64(servers), 1)

	var parts []Slice
	for _, b := range blocks {
		n := max((b.Size+avg-1)/avg, 1)
		for k := range n {
			lo, hi := b.Size*k/n, b.Size*(k+1)/n
			parts = append(parts, Slice{Block: b.Name, Offset: lo, Size: hi - lo})
		}
	}
	slices.SortStableFunc(parts, func(a, b Slice) int { return cmp.Compare(b.Size, a.Size) })

	type load struct {
		bytes  int64
		slices int
		server int
	}
	h := pq.Heap[load]{Less: func(a, b load) bool {
		return a.bytes < b.bytes || a.bytes == b.bytes && (a.slices < b.slices || a.slices == b.slices && a.server < b.server)
	}}
	for s := range servers {
		h.Items = append(h.Items, load{server: s})
	}
	h.Init()
	out := make([][]Slice, servers)
	for _, p := range parts {
		l := h.Pop()
		out[l.server] = append(out[l.server], p)
		l.bytes += p.Size
		l.slices++
		h.Push(l)
	}
	return out
}
