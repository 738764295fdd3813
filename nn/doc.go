// Package nn is graft's training engine: graph layers (Linear, GCN,
// GraphSAGE, GAT) with hand-written forward and backward passes, activations,
// dropout, losses, optimisers, learning-rate schedules, initialisers, and
// parameter save/load in the safetensors format.
//
// # One model for one process and for many
//
// Layers aggregate over a [Graph], which describes the rows this process
// computes (its targets) and the rows they read from (its sources: the
// targets first, then "halo" rows owned by other workers). Every layer first
// computes a per-node quantity on its own rows (for GCN, X·W), extends it to
// all sources through the Graph's [Halo] exchange, and then aggregates
// locally. In a single process the Halo is nil and the sources are the
// targets; a distributed trainer supplies a partition's local operators and a
// Halo that talks to its peers, and runs exactly the same [Model].
//
// # Buffers
//
// Layers allocate their activations and gradients on first use and reuse
// them, so after the first epoch a training step allocates almost nothing.
// Matrices returned by Forward and Backward belong to the layer and are
// overwritten by the next call.
//
// # Conventions
//
// Weights are stored internally as [in, out] so that a layer computes X·W,
// and saved in PyTorch's [out, in] layout under PyTorch-style names
// (layers.0.weight, layers.0.lin_l.weight, layers.0.att_src, ...). Backward
// overwrites parameter gradients rather than accumulating them.
//
// Dropout is counter-based: whether element (global row, column) is dropped
// at a given (seed, step, site) is a hash of those numbers, so one worker and
// N workers drop exactly the same elements.
package nn
