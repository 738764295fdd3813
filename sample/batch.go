package sample

// prepare sizes b for a model of layers blocks over a graph of n nodes.
func (b *Batch) prepare(layers, n int) {
	if len(b.layers) != layers {
		b.layers = make([]layer, layers)
	}
	if len(b.local) != n {
		b.local = make([]int32, n)
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
