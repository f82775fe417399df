package optimus

import (
	"cmp"
	"slices"
)

// Block is a parameter block of a model, such as one layer's weights, of
// Size parameters.
type Block struct {
	Name string
	Size int64
}

// Slice is a contiguous part of a block, assigned to one parameter server.
// Each slice is one update request per worker per step (§5.3).
type Slice struct {
	Block  string
	Offset int64
	Size   int64
}

// DefaultSmallFraction is the size, as a fraction of the average load per
// server, below which PAA calls a block very small: 1%, as the paper's
// evaluation sets it (§6.1).
const DefaultSmallFraction = 0.01

// AssignParameters assigns a model's parameter blocks to servers with the
// parameter assignment algorithm (PAA) of Optimus §5.3, which balances the
// parameters each server holds and the update requests it serves while
// keeping the total number of requests low. With avg_size the total size
// over the servers, blocks are taken in decreasing order of size:
//
//   - a very small block (under small·avg_size; §6.1 uses small = 1%) goes
//     to the server with the fewest update requests so far;
//   - a block of up to avg_size goes to the server with the smallest
//     remaining capacity (avg_size less what it holds) that can still hold
//     it: best fit. The text does not say where a block goes that no
//     server has room for; here it goes to the server holding the least,
//     as a partition of a large block does;
//   - a larger block is sliced into partitions of avg_size (the last one
//     smaller), each going to the server holding the least.
//
// Every block or partition assigned adds one update request to its server.
// Ties go to the lower-numbered server, so the result is deterministic.
// It returns the slices of each server; every parameter of every block is
// assigned exactly once. servers must be at least 1; small ≤ 0 means
// DefaultSmallFraction.
func AssignParameters(blocks []Block, servers int, small float64) [][]Slice {
	if small <= 0 {
		small = DefaultSmallFraction
	}
	var total int64
	for _, b := range blocks {
		total += b.Size
	}
	avg := max(float64(total)/float64(servers), 1)
	sorted := slices.Clone(blocks)
	slices.SortStableFunc(sorted, func(a, b Block) int { return cmp.Compare(b.Size, a.Size) })

	out := make([][]Slice, servers)
	held := make([]int64, servers)
	leastHeld := func() int {
		best := 0
		for s := range servers {
			if held[s] < held[best] {
				best = s
			}
		}
		return best
	}
	assign := func(s int, sl Slice) {
		out[s] = append(out[s], sl)
		held[s] += sl.Size
	}
	for _, b := range sorted {
		size := float64(b.Size)
		switch {
		case size < small*avg:
			best := 0
			for s := range servers {
				if len(out[s]) < len(out[best]) {
					best = s
				}
			}
			assign(best, Slice{Block: b.Name, Size: b.Size})
		case size <= avg:
			best := -1
			for s := range servers {
				room := avg - float64(held[s])
				if room >= size && (best < 0 || room < avg-float64(held[best])) {
					best = s
				}
			}
			if best < 0 {
				best = leastHeld()
			}
			assign(best, Slice{Block: b.Name, Size: b.Size})
		default:
			part := int64(avg)
			for off := int64(0); off < b.Size; off += part {
				assign(leastHeld(), Slice{Block: b.Name, Offset: off, Size: min(part, b.Size-off)})
			}
		}
	}
	return out
}

// Balance summarises an assignment by Table 3's three measures: the
// largest difference of parameters held by two servers, the largest
// difference of their update requests, and the total requests.
type Balance struct {
	SizeSpread    int64
	RequestSpread int
	Requests      int
}

// BalanceOf returns the Balance of an assignment.
func BalanceOf(assignment [][]Slice) Balance {
	var b Balance
	var lo, hi int64
	loR, hiR := -1, 0
	for i, s := range assignment {
		var held int64
		for _, sl := range s {
			held += sl.Size
		}
		if i == 0 || held < lo {
			lo = held
		}
		hi = max(hi, held)
		if loR < 0 || len(s) < loR {
			loR = len(s)
		}
		hiR = max(hiR, len(s))
		b.Requests += len(s)
	}
	b.SizeSpread, b.RequestSpread = hi-lo, hiR-max(loR, 0)
	return b
}
