// Package nn is graft's training engine: graph layers (Linear, GCN,
// GraphSAGE, GAT) with hand-written forward and backward passes, activations,
// dropout, losses, optimisers, learning-rate schedules, initialisers, and
// parameter save/load in the safetensors format.
//
// # One model for one process, for many, and for mini-batches
//
// Layers aggregate over a [Block]: a bipartite graph from source rows to
// destination rows, the destinations first among the sources (DGL's
// message-flow graphs). Every layer first computes a per-node quantity on
// its input rows (for GCN, X·W), has it at every source, and then
// aggregates into the destinations. One type covers three cases: the whole
// graph in one process ([WholeGraph]: destinations and sources are all
// nodes); a partition's local graph, whose [Halo] exchange brings the halo
// rows of each per-node quantity from the workers that own them (the
// input then has a row per destination); and a mini-batch's sampled
// blocks, one per layer, whose input has a row per source and whose
// operators carry the sampler's normalisation in their values. The same
// [Model] runs on all three ([Model.Forward] takes one block per layer, or
// one for all).
//
// # Buffers
//
// Layers allocate their activations and gradients on first use and reuse
// them, so after the first epoch a training step allocates almost nothing.
// Matrices returned by Forward and Backward belong to the layer and are
// overwritten by the next call. A model's backward pass writes a layer's
// input gradient over that input where an in-place ReLU made it, keeping
// the ReLU's signs as bits (signs.go), and the GCN and GraphSAGE layers
// of parts in one process compute their per-node quantity in one buffer
// the parts share ([SharedHalo]).
//
// # Mixed precision
//
// Features may be held in bfloat16 ([BF16Features]); the products read
// them a block of rows at a time, widened exactly. [Model.SetBF16] makes
// the graph layers round the per-node projection they aggregate (and the
// halo exchange moves) to bfloat16 for every node. [Model.SetProducts]
// chooses the training passes' matrix products: at tensor.BF16Products
// their operands are rounded to bfloat16 on CPUs that multiply bf16
// pairs. Parameters, gradients and every sum stay float32.
//
// # Conventions
//
// Weights are stored internally as [in, out] so that a layer computes X·W,
// and saved in PyTorch's [out, in] layout under PyTorch-style names
// (layers.0.weight, layers.0.lin_l.weight, layers.0.att_src, ...), or under
// PyTorch Geometric's ([PyGLayout], via [Renamed]). Backward overwrites
// parameter gradients rather than accumulating them.
//
// Dropout is counter-based: whether element (global row, column) is dropped
// at a given (seed, step, site) is a hash of those numbers, so one worker and
// N workers drop exactly the same elements.
package nn
