package pq

// Heap is a binary heap; Pop returns the item that is "least" by Less. Its
// zero value is not usable: set Less.
type Heap[T any] struct {
	Items []T
	Less  func(a, b T) bool
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.Items) }

// Init establishes the heap order over Items, in O(n).
func (h *Heap[T]) Init() {
	for i := len(h.Items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.Items = append(h.Items, x)
	h.up(len(h.Items) - 1)
}

// Pop removes and returns the least item. The heap must not be empty.
func (h *Heap[T]) Pop() T {
	top := h.Items[0]
	last := len(h.Items) - 1
	h.Items[0] = h.Items[last]
	h.Items = h.Items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.Less(h.Items[i], h.Items[parent]) {
			return
		}
		h.Items[i], h.Items[parent] = h.Items[parent], h.Items[i]
		i = parent
	}
}

func (h *Heap[T]) down(i int) {
	n := len(h.Items)
	for {
		least := i
		if l := 2*i + 1; l < n && h.Less(h.Items[l], h.Items[least]) {
			least = l
		}
		if r := 2*i + 2; r < n && h.Less(h.Items[r], h.Items[least]) {
			least = r
		}
		if least == i {
			return
		}
		h.Items[i], h.Items[least] = h.Items[least], h.Items[i]
		i = least
	}
}
