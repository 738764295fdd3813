package job

import (
	"sync/atomic"

	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/optim"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/tensor"
)

// MemoryAccount is where a process's memory went (Summary.Memory), in
// bytes. Graph, features and parameters are sized from what the process
// holds at the end of the run; activations and communication are the most
// the buffers the run grew held at once (package memacct); the rest is
// peak RSS
// minus the others, never below zero: the Go runtime, garbage not yet
// collected (graft collects at 25% heap growth unless GOGC says
// otherwise), the samplers' structures and the operators of the blocks
// they sample, the buffers of data-parallel fetches and of the
// transports, and temporaries.
type MemoryAccount struct {
	// Graph is the graph's adjacency (int64 offsets, int32 neighbours) and,
	// partitioned, the parts' local adjacencies and halos (every part's in
	// one process, or read from --part-dir; a worker of a multi-process
	// job its own), and the aggregation operators built from them: the
	// normalised adjacencies the layers multiply by, their transposes for
	// the backward pass, and their copies renumbered to the rows of the
	// buffer parts in one process share; of a mini-batch's sampled blocks,
	// whose operators the sampler makes, the transposes and the first
	// block's operator renumbered to the feature matrix's rows (the most
	// held at once).
	Graph int64 `json:"graph_bytes"`
	// Features is the input feature matrix (dense, sparse or bf16),
	// partitioned in one process the parts' copies of their rows, the
	// parts' rows a process reads from --part-dir or, as a worker of a
	// multi-process data-parallel job, keeps of the whole, and the copies
	// trainers make in another form (data-parallel workers hold sparse
	// features dense, and bf16 ones rounded).
	Features int64 `json:"features_bytes"`
	// Parameters are the values, gradients and best epoch's copy of every
	// parameter and the optimiser's state, for every model replica of the
	// process (one per worker of an in-process run).
	Parameters int64 `json:"parameters_bytes"`
	// Activations are the layers' stored outputs and gradients (and the
	// sign bits of their ReLUs, where the next layer writes its input
	// gradient over the output), dropout masks, exact evaluation's
	// per-node outputs, and, for parts in one process, the buffer they
	// share for the layers' per-node quantities (a row per node, counted
	// once: halo.Exchange.Shared).
	Activations int64 `json:"activations_bytes"`
	// Communication are the halo exchange's buffers and its codecs' state
	// (delta coding's reconstructions, at both ends of every stream).
	// Parts in one process move uncompressed rows and gradients without
	// message buffers (the peers read the rows where they lie and make
	// the gradients as they read them, a 64 KiB piece at a time:
	// comm.Direct), holding only where each node's row is in the shared
	// buffer.
	Communication int64 `json:"communication_bytes"`
	// Rest is peak RSS minus the above.
	Rest int64 `json:"rest_bytes"`
}

// memoryAccount sums up this process's memory at the end of a run that
// trained model (one replica of it).
func (s *Spec) memoryAccount(in *input, model *nn.Model, peakRSS int64) MemoryAccount {
	m := MemoryAccount{
		Activations:   in.memory.Peak(memacct.Activations),
		Communication: in.memory.Peak(memacct.Communication),
	}
	if g := in.problem.Graph; g != nil { // a worker reading its part from --part-dir has none
		m.Graph = 8*int64(len(g.Offsets)) + 4*int64(len(g.Neighbors))
	}
	m.Features = featureBytes(in.problem.Features)
	if x := in.problem.FeaturesBF16; x != nil {
		m.Features += x.Bytes()
	}
	inProcess := s.Place.Size <= 1
	if in.layout != nil && in.layout.K > 1 {
		for i := range in.layout.Parts {
			m.Graph += partGraphBytes(&in.layout.Parts[i])
		}
		if inProcess { // rebalancing full-graph parts copy their rows beside the whole's (the others let the whole's go: dropWhole)
			m.Features *= 2
		}
	}
	m.Graph += atomic.LoadInt64(&in.partGraph) + in.memory.Peak(memacct.Operators)
	m.Features += atomic.LoadInt64(&in.partFeatures) + in.memory.Peak(memacct.Features)
	replicas := int64(1)
	switch {
	case s.Async != nil && inProcess:
		replicas = int64(s.Async.Workers)
	case inProcess:
		replicas = int64(max(s.Parts, 1))
	}
	m.Parameters = replicas * parameterBytes(model, s.Train.Optimizer)
	m.Rest = max(peakRSS-m.Graph-m.Features-m.Parameters-m.Activations-m.Communication, 0)
	return m
}

// parameterBytes is one replica's parameters in training: value, gradient
// and the best epoch's copy in float32, and the optimiser's buffers.
func parameterBytes(model *nn.Model, opt nn.OptimizerConfig) int64 {
	if model == nil {
		return 0
	}
	cfg := optim.Config{Rule: opt.Algorithm, Momentum: opt.Momentum, Nesterov: opt.Nesterov, CatchUp: opt.CatchUp}
	if cfg.Check() != nil {
		return 0
	}
	buffers := int64(len(optim.NewState[float32](cfg, 0).Buffers()))
	var n int64
	for _, p := range model.Params() {
		n += int64(len(p.Value.Data))
	}
	return 4 * n * (3 + buffers)
}

func featureBytes(x nn.Features) int64 {
	switch {
	case x.Dense != nil:
		return 4 * int64(len(x.Dense.Data))
	case x.Sparse != nil:
		return csrBytes(x.Sparse)
	case x.BF16 != nil:
		return x.BF16.Bytes()
	}
	return 0
}

// partGraphBytes is a part's local adjacency, its node lists and its send
// lists.
func partGraphBytes(p *partition.Part) int64 {
	n := csrBytes(p.Local) + 4*int64(len(p.Owned)+len(p.Halo))
	for _, send := range p.Send {
		n += 4 * int64(len(send))
	}
	return n
}

// holdPart counts in the memory account a part this process holds beside
// what in.problem and in.layout hold: one read from --part-dir (its
// features and structure), or one cut from a problem whose features the
// process then let go of (its features; in.layout keeps its structure).
// The ranks of a process call it at once.
func (in *input) holdPart(sp *partstore.Part, structure bool) {
	atomic.AddInt64(&in.partFeatures, featureBytes(sp.Features))
	if structure {
		atomic.AddInt64(&in.partGraph, partGraphBytes(&sp.Part))
	}
}

func csrBytes(a *tensor.CSR) int64 {
	if a == nil {
		return 0
	}
	return 8*int64(len(a.Offsets)) + 4*int64(len(a.Indices)+len(a.Values))
}
