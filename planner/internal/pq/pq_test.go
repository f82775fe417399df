package pq

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

func TestHeap_SortsLikeSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		xs := make([]int, rng.IntN(200))
		for i := range xs {
			xs[i] = rng.IntN(50)
		}
		h := &Heap[int]{Less: func(a, b int) bool { return a > b }}
		h.Items = slices.Clone(xs[:len(xs)/2])
		h.Init()
		for _, x := range xs[len(xs)/2:] {
			h.Push(x)
		}
		var got []int
		for h.Len() > 0 {
			got = append(got, h.Pop())
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		slices.Reverse(want)
		must.Eq(t, want, got)
	}
}

func TestHeap_NoAllocs(t *testing.T) {
	h := &Heap[[2]int]{Less: func(a, b [2]int) bool { return a[0] < b[0] }, Items: make([]([2]int), 0, 64)}
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 32 {
			h.Push([2]int{i * 7 % 13, i})
		}
		for h.Len() > 0 {
			h.Pop()
		}
	})
	must.Eq(t, 0, allocs)
}
