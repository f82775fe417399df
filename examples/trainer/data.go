package main

import (
	"math"
	"math/rand/v2"
)

// logitScale is the standard deviation of the true logit x·w*: large
// enough that a good model beats the initial loss ln 2 ≈ 0.693 by far,
// small enough that labels stay noisy and the optimum is not separable.
const logitScale = 4

// Random streams of the dataset, so that truth, examples and batches never
// share random numbers.
const (
	streamTruth uint64 = iota + 1
	streamExample
	streamBatch
)

// dataset is the synthetic binary classification problem the trainer
// learns: features are independent standard normals, the true weights w*
// are normal with variance logitScale²/features, and the label of x is 1
// with probability sigmoid(x·w*), so the labels are noisy. Example i is a
// pure function of (seed, i): every process sees the same examples without
// storing or exchanging them. Examples [0, examples) are the training set;
// the ones after it are the held-out evaluation set. A dataset is
// read-only and safe for concurrent use.
type dataset struct {
	seed     uint64
	features int
	examples int
	truth    []float64
}

func newDataset(seed uint64, features, examples int) *dataset {
	d := &dataset{seed: seed, features: features, examples: examples, truth: make([]float64, features)}
	rng := d.rng(streamTruth, 0)
	scale := logitScale / math.Sqrt(float64(features))
	for j := range d.truth {
		d.truth[j] = scale * rng.NormFloat64()
	}
	return d
}

// rng returns the generator of item i of a stream.
func (d *dataset) rng(stream, i uint64) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix(d.seed^splitmix(stream)), splitmix(i)))
}

// splitmix64's finaliser: consecutive inputs give unrelated outputs.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// example writes the features of example i into x (len features) and
// returns its label, 0 or 1.
func (d *dataset) example(i int, x []float64) float64 {
	rng := d.rng(streamExample, uint64(i))
	z := 0.0
	for j := range x {
		x[j] = rng.NormFloat64()
		z += x[j] * d.truth[j]
	}
	if rng.Float64() < sigmoid(z) {
		return 1
	}
	return 0
}

// batch is a set of examples: row i of x (features wide) has label y[i].
type batch struct {
	x []float64
	y []float64
}

func (d *dataset) rows(idx []int) batch {
	b := batch{x: make([]float64, len(idx)*d.features), y: make([]float64, len(idx))}
	for r, i := range idx {
		b.y[r] = d.example(i, b.x[r*d.features:(r+1)*d.features])
	}
	return b
}

// trainBatch returns the size examples a worker trains on in pass pass
// (from 0; more than one with gradient accumulation) of step: drawn
// uniformly with replacement from the training set, as a function of
// (seed, step, rank, pass) only, so a restarted worker repeats its batch.
func (d *dataset) trainBatch(step int64, rank, pass, size int) batch {
	rng := d.rng(streamBatch, uint64(step)<<16^uint64(rank)^uint64(pass)<<48)
	idx := make([]int, size)
	for i := range idx {
		idx[i] = rng.IntN(d.examples)
	}
	return d.rows(idx)
}

// evalBatch returns the first n examples of the evaluation set.
func (d *dataset) evalBatch(n int) batch {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = d.examples + i
	}
	return d.rows(idx)
}
