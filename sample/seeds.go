package sample

import (
	"fmt"
	"slices"
	"sync"
)

// seedOrder deals an epoch's seeds into batches: the training nodes in an
// order drawn from (seed, epoch), cut into batches of size seeds. Every
// seed-driven sampler uses it, so that they cover the same seeds per epoch;
// the cluster sampler deals its clusters with it, under a purpose of its own.
type seedOrder struct {
	train   []int32
	size    int
	seed    uint64
	purpose uint64 // of the order's key: purposeOrder for the seeds
	// share of shares (Config.Share, Config.Shares): the batches are cut
	// from every shares-th node of the order from the share-th on.
	share, shares int

	mu     sync.Mutex
	epochs [2]struct {
		epoch int
		order []int32
	}
}

func newSeedOrder(train []int32, size int, seed uint64) *seedOrder {
	return &seedOrder{train: train, size: size, seed: seed, purpose: purposeOrder, shares: 1}
}

// dealt is the order of cfg's seeds: the share cfg names of each epoch's
// order of all of them.
func dealt(cfg Config) *seedOrder {
	o := newSeedOrder(cfg.Train, cfg.BatchSize, cfg.Seed)
	if cfg.Shares > 1 {
		o.share, o.shares = cfg.Share, cfg.Shares
	}
	return o
}

// length is the number of nodes in an epoch's share of the order.
func (o *seedOrder) length() int { return (len(o.train) - o.share + o.shares - 1) / o.shares }

// batches is the number of batches per epoch; the last may be smaller.
func (o *seedOrder) batches() int { return (o.length() + o.size - 1) / o.size }

// keyIndex is the index that keys the random draws of batch index: its
// place among all shares' batches, so that no two shares draw alike.
func (o *seedOrder) keyIndex(index int) int { return index*o.shares + o.share }

// seeds returns batch index of epoch, or an error for an index outside
// the epoch.
func (o *seedOrder) seeds(epoch, index int) ([]int32, error) {
	if index < 0 || index >= o.batches() {
		return nil, fmt.Errorf("sample: batch %d of an epoch of %d", index, o.batches())
	}
	order := o.order(epoch)
	return order[index*o.size : min((index+1)*o.size, len(order))], nil
}

// order returns epoch's order of the training nodes, drawn once and kept
// for the two epochs a prefetching trainer may be sampling at a time.
func (o *seedOrder) order(epoch int) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.epochs {
		if e.order != nil && e.epoch == epoch {
			return e.order
		}
	}
	order := slices.Clone(o.train)
	r := stream{key(o.seed, o.purpose, uint64(epoch))}
	for i := len(order) - 1; i > 0; i-- { // Fisher–Yates
		j := r.intn(i + 1)
		order[i], order[j] = order[j], order[i]
	}
	if o.shares > 1 { // this share: every shares-th from the share-th on
		n := 0
		for i := o.share; i < len(order); i += o.shares {
			order[n] = order[i]
			n++
		}
		order = order[:n]
	}
	slot := &o.epochs[0]
	if o.epochs[1].epoch < slot.epoch {
		slot = &o.epochs[1]
	}
	slot.epoch, slot.order = epoch, order
	return order
}

// sampleSeeds fills b with the batch of seeds, batch index of epoch, for
// a seed-driven sampler: the seeds are the last block's destinations, and
// from the last block down makeBlock(l, dst, k) makes block l of
// destinations dst (the block above's sources) with k the key of (seed,
// purpose, epoch, index, l).
func sampleSeeds(cfg *Config, purpose uint64, epoch, index int, seeds []int32, b *Batch, makeBlock func(l int, dst []int32, k uint64) error) error {
	b.prepare(cfg.Layers, cfg.Graph.N)
	dst := seeds
	for l := cfg.Layers - 1; l >= 0; l-- {
		if err := makeBlock(l, dst, key(cfg.Seed, purpose, uint64(epoch), uint64(index), uint64(l))); err != nil {
			return err
		}
		dst = b.layers[l].src
	}
	b.finishSeeds(seeds)
	return nil
}
