package sample

import "github.com/graft-gnn/graft/internal/hugepage"

// prepare sizes b for a model of layers blocks over a graph of n nodes.
func (b *Batch) prepare(layers, n int) {
	if len(b.layers) != layers {
		b.layers = make([]layer, layers)
	}
	if len(b.local) != n {
		b.local = make([]int32, n)
		hugepage.Collapse(b.local) // read at random, an entry per sampled edge
	}
}

// finish points b's blocks and rows at its layers' storage; output holds
// the last block's destinations.
func (b *Batch) finish(output []int32) {
	b.Blocks = b.Blocks[:0]
	for i := range b.layers {
		b.Blocks = append(b.Blocks, &b.layers[i].block)
	}
	b.Input = b.layers[0].src
	b.Output = append(b.Output[:0], output...)
}

// finishSeeds is finish for a seed-driven sampler: the seeds are the output
// rows, and every one's loss counts, each as much as the others.
func (b *Batch) finishSeeds(seeds []int32) {
	b.finish(seeds)
	b.Loss = b.Loss[:0]
	for i := range seeds {
		b.Loss = append(b.Loss, int32(i))
	}
	b.Weight = nil
}
