package dataparallel

import (
	"fmt"
	"strings"

	"github.com/graft-gnn/graft/sample"
)

// partSampler draws one worker's batches over the parts. Every worker
// calls sample for every batch of an epoch, in order, whether or not it
// has anything to draw: each call makes the same collectives on every
// worker.
type partSampler interface {
	// batches is the number of batches of an epoch, the same on every
	// worker.
	batches() int
	// sample fills b with this worker's batch index of epoch and returns
	// the labels of b's output rows (those of its loss rows at least).
	sample(epoch, index int, b *sample.Batch) ([]int32, error)
	// norm is the loss normaliser of the optimiser step of micros
	// batches from index: the loss rows of all of them over every worker
	// (at least 1) for unweighted batches, whose loss is the mean over
	// those rows, and micros for weighted ones, each an estimate of the
	// mean training loss by itself.
	norm(epoch, index, micros int) float64
	// local reports whether the batches' nodes are always this worker's
	// own: their features need no exchange.
	local() bool
}

// samplerConfig is what a part sampler is made for.
type samplerConfig struct {
	sh        *share
	t         *batcher
	spec      sample.PartSpec
	batchSize int
	layers    int
	agg       sample.Aggregation
	seed      uint64
}

// newPartSampler returns the part sampler of cfg.spec.
func newPartSampler(cfg samplerConfig) (partSampler, error) {
	switch cfg.spec.Kind {
	case "neighbor":
		s, err := sample.NewPartNeighbor(cfg.sh.pg, cfg.spec.Sizes, cfg.layers, cfg.agg, cfg.seed)
		if err != nil {
			return nil, err
		}
		return newLayered(cfg, neighbourLayers{s}), nil
	case "fastgcn":
		return newFastGCN(cfg)
	case "ladies":
		return newLADIES(cfg)
	case "cluster":
		return newClusterSampler(cfg)
	case "saint-node", "saint-edge", "saint-rw":
		return newSaintSampler(cfg)
	}
	return nil, sample.SpecError{Err: fmt.Errorf("sampler %s: not available over parts", cfg.spec.Kind)}
}

// layerSampler is the sampling of a seed-driven sampler's blocks over the
// parts, one block at a time from the seeds' down: the owner of each
// destination draws its row, and the worker whose batch it is makes the
// block from the rows.
type layerSampler interface {
	layers() int
	// draw fills r with the rows of dst, nodes this worker owns, in block
	// l of batch index of epoch.
	draw(epoch, index, l int, dst []int32, r *sample.Rows) error
	// set makes block l of b from the rows r of its destinations dst.
	set(b *sample.Batch, epoch, index, l int, dst []int32, r *sample.Rows) error
}

// layered is a seed-driven sampler over the parts: each worker's seeds
// are its own training nodes, dealt by a dealer, and its blocks are drawn
// by a layerSampler.
type layered struct {
	sh     *share
	t      *batcher
	deal   dealer
	ls     layerSampler
	labels []int32
}

func newLayered(cfg samplerConfig, ls layerSampler) *layered {
	sh := cfg.sh
	return &layered{sh: sh, t: cfg.t, ls: ls, deal: dealer{train: sh.train, size: cfg.batchSize, seed: cfg.seed, counts: sh.trainCounts}}
}

func (s *layered) batches() int { return s.deal.batches() }
func (s *layered) local() bool  { return false }

func (s *layered) sample(epoch, index int, b *sample.Batch) ([]int32, error) {
	seeds := s.deal.seeds(epoch, index)
	dst := seeds
	for l := s.ls.layers() - 1; l >= 0; l-- {
		err := s.t.drawRows(StructureSite, dst, func(dst []int32, r *sample.Rows) error { return s.ls.draw(epoch, index, l, dst, r) })
		if err != nil {
			return nil, err
		}
		if err := s.ls.set(b, epoch, index, l, dst, &s.t.merged); err != nil {
			return nil, err
		}
		dst = b.Sources(l)
	}
	b.FinishSeeds(seeds)
	s.labels = s.labels[:0]
	for _, v := range seeds {
		s.labels = append(s.labels, s.sh.labels[s.sh.row(v)])
	}
	return s.labels, nil
}

func (s *layered) norm(_, index, micros int) float64 {
	n := 0
	for m := range micros {
		n += s.deal.total(index + m)
	}
	return float64(max(n, 1))
}

// neighbourLayers is the neighbour sampler's blocks: a node's neighbours
// are keyed by (seed, epoch, layer, node), so its owner draws them.
type neighbourLayers struct{ s *sample.PartNeighbor }

func (n neighbourLayers) layers() int { return n.s.Layers() }

func (n neighbourLayers) draw(epoch, _, l int, dst []int32, r *sample.Rows) error {
	return n.s.Draw(epoch, l, dst, r)
}

func (n neighbourLayers) set(b *sample.Batch, _, _, l int, dst []int32, r *sample.Rows) error {
	return n.s.SetLayer(b, l, dst, r)
}

// newFastGCN is FastGCN over the parts: every worker draws the same nodes
// for a block, from the whole graph's probabilities (each worker adds its
// rows' share, and they are shared once), and the owner of a destination
// keeps the drawn nodes of its row.
func newFastGCN(cfg samplerConfig) (partSampler, error) {
	sh := cfg.sh
	mass, err := sh.columnSums(sample.FastGCNColumnMass(sh.pg, sh.owned, cfg.agg))
	if err != nil {
		return nil, err
	}
	q, err := sh.allGather(sample.FastGCNColumnWeights(sh.pg, sh.owned, mass, cfg.agg))
	if err != nil {
		return nil, err
	}
	s, err := sample.NewPartFastGCN(sh.pg, cfg.spec.Sizes, cfg.layers, cfg.agg, cfg.seed, q)
	if err != nil {
		return nil, err
	}
	return newLayered(cfg, fastGCNLayers{s}), nil
}

type fastGCNLayers struct{ s *sample.PartFastGCN }

func (f fastGCNLayers) layers() int { return f.s.Layers() }

func (f fastGCNLayers) draw(epoch, index, l int, dst []int32, r *sample.Rows) error {
	return f.s.Draw(epoch, index, l, dst, r)
}

func (f fastGCNLayers) set(b *sample.Batch, _, _, l int, dst []int32, r *sample.Rows) error {
	return f.s.SetLayer(b, l, dst, r)
}

// newLADIES is LADIES over the parts: a worker draws its blocks for its
// own destinations, whose rows their owners send, with every node's
// degree, shared once.
func newLADIES(cfg samplerConfig) (partSampler, error) {
	sh := cfg.sh
	own := make([]float64, len(sh.owned))
	for i, v := range sh.owned {
		own[i] = float64(sh.pg.Degree[v])
	}
	all, err := sh.allGather(own)
	if err != nil {
		return nil, err
	}
	deg := make([]int32, len(all))
	for v, d := range all {
		deg[v] = int32(d)
	}
	s, err := sample.NewPartLADIES(sh.pg, deg, cfg.spec.Sizes, cfg.spec.RowNorm, cfg.layers, cfg.agg, cfg.seed)
	if err != nil {
		return nil, err
	}
	return newLayered(cfg, ladiesLayers{s: s, rank: sh.rank, size: sh.size}), nil
}

type ladiesLayers struct {
	s          *sample.PartLADIES
	rank, size int
}

func (d ladiesLayers) layers() int { return d.s.Layers() }

func (d ladiesLayers) draw(_, _, _ int, dst []int32, r *sample.Rows) error {
	return d.s.Candidates(dst, r)
}

func (d ladiesLayers) set(b *sample.Batch, epoch, index, l int, dst []int32, r *sample.Rows) error {
	return d.s.SetLayer(b, epoch, index*d.size+d.rank, l, dst, r)
}

// SendsFeatures reports whether batches of the sampler spec (KIND:ARGS)
// fetch input feature rows from other workers: Cluster-GCN's and
// saint-node's batches stay within a worker's part.
func SendsFeatures(spec string) bool {
	kind, _, _ := strings.Cut(spec, ":")
	return kind != "cluster" && kind != "saint-node"
}
