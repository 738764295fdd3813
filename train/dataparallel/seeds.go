package dataparallel

import (
	"math/rand/v2"
	"slices"
)

// Seeds returns batch index of epoch of a worker whose training nodes are
// train, with size seeds per batch: its training nodes in an order drawn
// from (seed, epoch), cut into batches of size; an index past its last
// batch is an empty batch. Batch index of a run is the union of every
// worker's batch index.
func Seeds(train []int32, size int, seed uint64, epoch, index int) []int32 {
	lo := index * size
	if lo >= len(train) || lo < 0 {
		return nil
	}
	return order(train, seed, epoch)[lo:min(lo+size, len(train))]
}

// order is epoch's order of train (Fisher–Yates).
func order(train []int32, seed uint64, epoch int) []int32 {
	out := slices.Clone(train)
	r := rand.New(rand.NewPCG(seed, 0x6461746170617261^uint64(epoch)))
	for i := len(out) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// dealer deals a worker's seeds, keeping the current epoch's order.
type dealer struct {
	train  []int32
	size   int
	seed   uint64
	counts []int // every worker's training nodes
	epoch  int
	cur    []int32
}

// batches is the number of batches of an epoch: the most any worker has.
func (d *dealer) batches() int {
	return (slices.Max(d.counts) + d.size - 1) / d.size
}

// seeds returns this worker's batch index of epoch.
func (d *dealer) seeds(epoch, index int) []int32 {
	if d.cur == nil || d.epoch != epoch {
		d.cur, d.epoch = order(d.train, d.seed, epoch), epoch
	}
	lo := index * d.size
	if lo >= len(d.cur) {
		return nil
	}
	return d.cur[lo:min(lo+d.size, len(d.cur))]
}

// total is the number of seeds of batch index over every worker.
func (d *dealer) total(index int) int {
	n := 0
	for _, c := range d.counts {
		n += min(max(c-index*d.size, 0), d.size)
	}
	return n
}
