package optimus

import (
	"cmp"
	"fmt"
	"math/rand/v2"
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

// MXNetThreshold is MXNet's default size (10^6 parameters) below which a
// block goes to one server whole (§5.3).
const MXNetThreshold = 1_000_000

// AssignMXNet assigns blocks as MXNet does by default, the assignment PAA
// replaces (§5.3): a block smaller than threshold goes whole to a server
// chosen at random (from rng), and a larger one is sliced evenly among all
// the servers. It is the baseline of Table 3.
func AssignMXNet(blocks []Block, servers int, threshold int64, rng *rand.Rand) [][]Slice {
	out := make([][]Slice, servers)
	for _, b := range blocks {
		if b.Size < threshold {
			s := rng.IntN(servers)
			out[s] = append(out[s], Slice{Block: b.Name, Size: b.Size})
			continue
		}
		n := int64(servers)
		for k := range n {
			lo, hi := b.Size*k/n, b.Size*(k+1)/n
			out[k] = append(out[k], Slice{Block: b.Name, Offset: lo, Size: hi - lo})
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

// ResNet50Blocks returns the parameter blocks of MXNet's ResNet-50 (its
// symbols/resnet.py, version 2, bottleneck units of 3, 4, 6 and 3 over
// filters 256, 512, 1024 and 2048, 1000 classes): 157 blocks of 25.6
// million parameters in all, the model of Optimus Table 3 ("25 million
// parameters formed into 157 parameter blocks"). Each call returns a new
// slice.
func ResNet50Blocks() []Block {
	var bs []Block
	add := func(name string, size int64) { bs = append(bs, Block{Name: name, Size: size}) }
	bn := func(name string, c int64) { add(name+"_gamma", c); add(name+"_beta", c) }
	bn("bn_data", 3)
	add("conv0_weight", 7*7*3*64)
	bn("bn0", 64)
	in := int64(64)
	for stage, units := range []int{3, 4, 6, 3} {
		out := int64(256) << stage
		for u := range units {
			name := fmt.Sprintf("stage%d_unit%d", stage+1, u+1)
			bn(name+"_bn1", in)
			add(name+"_conv1_weight", in*out/4)
			bn(name+"_bn2", out/4)
			add(name+"_conv2_weight", 3*3*(out/4)*(out/4))
			bn(name+"_bn3", out/4)
			add(name+"_conv3_weight", out/4*out)
			if u == 0 {
				add(name+"_sc_weight", in*out)
			}
			in = out
		}
	}
	bn("bn1", 2048)
	add("fc1_weight", 2048*1000)
	add("fc1_bias", 1000)
	return bs
}
