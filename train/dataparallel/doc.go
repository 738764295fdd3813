// Package dataparallel trains on sampled mini-batches over a partitioned
// graph, one worker per part, none holding the whole graph.
//
// Each worker holds its part's structure (its nodes' adjacency rows, in
// global ids) and its nodes' features and labels, and draws its seeds from
// its own training nodes. A batch's blocks are sampled from the top layer
// down: per layer, the destinations a worker does not own are sent to their
// owners in one all-to-all, and the owners reply with the neighbours they
// draw for them. The neighbour sampler keys a node's draw by (seed, epoch,
// layer, node) only, so the owner draws what a sampler holding the whole
// graph would. The input rows' features then come from their owners in one
// more exchange. Gradients are all-reduced; each worker normalises its loss
// by the number of seeds of the step over all workers, so that N workers
// with b seeds each compute the loss and gradient of one batch of their N·b
// seeds.
//
// Every worker runs as many batches per epoch as the worker with the most
// (the training counts are exchanged once, at the start): a worker whose
// seeds have run out samples an empty batch, answers the others' requests
// and joins the gradient all-reduce with a zero gradient. Evaluation is
// exact layer-wise inference: each worker computes its own nodes' outputs
// of a layer from its neighbours' outputs of the layer below, fetched from
// their owners.
package dataparallel
