package sample

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
)

// Aggregation is what the model's layers read of a block: which operator
// a sampler must fill.
type Aggregation int

const (
	// GCN reads Operators.GCN: D^-1/2 (A+I) D^-1/2 with global degrees.
	GCN Aggregation = iota
	// Mean reads Operators.Mean: the mean over a node's neighbours
	// (GraphSAGE), without the node itself.
	Mean
	// Attention reads Operators.Loops: the pattern of A+I (GAT).
	Attention
)

// AggregationOf returns what a model of the given kind ("gcn", "sage",
// "gat", "mlp") reads of its blocks.
func AggregationOf(model string) (Aggregation, error) {
	switch model {
	case "gcn":
		return GCN, nil
	case "sage", "mlp":
		return Mean, nil
	case "gat":
		return Attention, nil
	}
	return 0, fmt.Errorf("sample: no aggregation for model %q", model)
}

// Config is what a sampler is made for.
type Config struct {
	Graph *graph.Graph
	// Train lists the training nodes: the seeds of the seed-driven
	// samplers, and the nodes whose loss counts.
	Train []int32
	// BatchSize is the number of seeds per mini-batch (seed-driven
	// samplers), or the sampler's own budget where its form gives none.
	BatchSize   int
	Layers      int
	Aggregation Aggregation
	Seed        uint64
	// Share and Shares deal every epoch's order of the training nodes
	// among Shares workers that each sample on their own (asynchronous
	// training): this sampler's batches are cut from every Shares-th
	// node of the order from the Share-th on, a new share each epoch, so
	// that every batch is a uniform draw from the whole of Train rather
	// than from a fixed part of it. Samplers that do not cut their
	// batches from an order of the seeds (GraphSAINT's, Cluster-GCN's)
	// take a fixed share instead, every Shares-th training node from the
	// Share-th on, and draw with Seed+Share, apart from the other shares.
	// Shares 0 or 1: the whole order.
	Share, Shares int
}

// fixedShare is c with Train cut to its share, the same every epoch, and
// its own seed, for the samplers whose batches are not cut from an order
// of the seeds.
func (c Config) fixedShare() Config {
	if c.Shares <= 1 {
		return c
	}
	var share []int32
	for i := c.Share; i < len(c.Train); i += c.Shares {
		share = append(share, c.Train[i])
	}
	c.Train, c.Seed, c.Share, c.Shares = share, c.Seed+uint64(c.Share), 0, 0
	return c
}

func (c *Config) check() error {
	switch {
	case c.Graph == nil:
		return fmt.Errorf("sample: no graph")
	case c.Layers < 1:
		return fmt.Errorf("sample: %d layers", c.Layers)
	case len(c.Train) == 0:
		return fmt.Errorf("sample: no training nodes")
	case c.BatchSize < 1:
		return fmt.Errorf("sample: batch size %d; want at least 1", c.BatchSize)
	case c.Shares > 1 && (c.Share < 0 || c.Share >= c.Shares):
		return fmt.Errorf("sample: share %d of %d", c.Share, c.Shares)
	case c.Shares > len(c.Train):
		return fmt.Errorf("sample: %d training nodes for %d shares; want at least one each", len(c.Train), c.Shares)
	}
	for _, v := range c.Train {
		if v < 0 || int(v) >= c.Graph.N {
			return fmt.Errorf("sample: training node %d outside the graph's %d nodes", v, c.Graph.N)
		}
	}
	return nil
}

// Batch is one mini-batch. A sampler fills it, reusing its storage, so a
// trainer keeps a few and cycles through them.
type Batch struct {
	// Blocks has one block per layer, the last one's destinations the
	// output rows; a subgraph sampler's one block serves every layer.
	Blocks []*nn.Block
	// Input holds the global ids of the first block's input rows (its
	// sources), whose features the model reads; Output those of the last
	// block's destinations, the rows of the logits.
	Input, Output []int32
	// Loss lists the rows of Output whose loss counts. Weight, when set,
	// holds each one's weight: the batch's loss is Σ Weight[i]·ℓ(Loss[i]),
	// an estimate of the mean training loss by itself (GraphSAINT's
	// normalisation). When nil, the loss is the mean over the Loss rows of
	// all the micro-batches of an optimiser step.
	Loss   []int32
	Weight []float32

	layers []layer // per block: its storage
	local  []int32 // per node of the graph: scratch, all zero between uses
}

// Sampler draws the mini-batches of an epoch.
type Sampler interface {
	// Batches is the number of mini-batches in an epoch.
	Batches() int
	// Sample fills b with mini-batch index (0-based) of epoch (1-based):
	// the same batch for the same sampler, epoch and index, whatever the
	// threads. It may be called from any goroutine, for different batches
	// at once.
	Sample(epoch, index int, b *Batch) error
}

// factory makes a sampler from the arguments of its form.
type factory func(args string, cfg Config) (Sampler, error)

var registry = struct {
	sync.RWMutex
	make  map[string]factory
	forms []string
}{make: map[string]factory{}}

// Register makes a sampler available to New under kind, with form the
// command line's syntax for it (for help). A sampler's file registers
// itself from an init function.
func Register(kind, form string, make factory) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.make[kind]; dup {
		panic("sample: sampler " + kind + " registered twice")
	}
	registry.make[kind] = make
	registry.forms = append(registry.forms, form)
}

// Forms lists the registered samplers' command-line forms.
func Forms() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.forms)
}

// SpecError is an error in a sampler's form or arguments, as opposed to
// the data it samples.
type SpecError struct{ Err error }

func (e SpecError) Error() string { return e.Err.Error() }
func (e SpecError) Unwrap() error { return e.Err }

// New returns the sampler spec names (KIND:ARGS, e.g. neighbor:15,10,5)
// for cfg.
func New(spec string, cfg Config) (Sampler, error) {
	spec = strings.ReplaceAll(spec, " ", "") // "neighbor:10, 5" as "neighbor:10,5"
	kind, args, _ := strings.Cut(spec, ":")
	registry.RLock()
	make, ok := registry.make[kind]
	registry.RUnlock()
	if !ok {
		return nil, SpecError{fmt.Errorf("unknown sampler %q (want %s)", spec, strings.Join(Forms(), "; "))}
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s, err := make(args, cfg)
	if err != nil {
		return nil, SpecError{fmt.Errorf("sampler %s: %w", spec, err)}
	}
	return s, nil
}
