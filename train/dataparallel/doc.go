// Package dataparallel trains on sampled mini-batches over a partitioned
// graph, one worker per part, none holding the whole graph.
//
// Each worker holds its part's structure (its nodes' adjacency rows, in
// global ids) and its nodes' features and labels, and draws its batches
// from its own part: its seeds from its own training nodes, its
// GraphSAINT subgraphs from its own nodes, its clusters from its own part.
// What a batch needs of another part its owner gives, through one
// request/reply round trip of the Communicator (batcher.roundTrip):
//
//   - the neighbour sampler and FastGCN, per layer: the destinations a
//     worker does not own go to their owners, which reply with the
//     neighbours they keep for them. The neighbour sampler keys a node's
//     draw by (seed, epoch, layer, node) only, and every worker draws
//     FastGCN's nodes of a layer from the batch's key, so the owner keeps
//     what a sampler holding the whole graph would, and the workers'
//     batches together are one batch of their seeds;
//   - LADIES, per layer: the owners send the rows of the destinations, and
//     the worker draws its layer from them;
//   - GraphSAINT's random walks, per step: a walk at another part's node
//     is stepped by its owner, from the step's key; the subgraph's rows,
//     filtered to it and normalised by the owners' counts (pre-sampling
//     is distributed too), come with their loss weights and labels;
//   - Cluster-GCN and GraphSAINT's node sampler stay within the part.
//
// The input rows' features then come from their owners in one more
// exchange. Gradients are all-reduced; unweighted losses are normalised by
// the step's loss rows over all workers, so that N workers compute the
// loss and gradient of one batch of their rows together, and GraphSAINT's
// weighted losses add up to one estimate of the mean training loss.
//
// Every worker runs as many batches per epoch as the others (the counts
// are exchanged once, at the start): a worker whose batches have run out
// samples an empty batch, answers the others' requests and joins the
// gradient all-reduce with a zero gradient. What the workers exchange
// once, before the first epoch (their setup records, which must agree, and
// from which all decide whether sparse features travel as dense rows: see
// Setup; who owns which node; the samplers' figures of the whole graph;
// GraphSAINT's pre-sampling), goes under SetupSite, and the first epoch's
// metrics report it as BytesSetup. Evaluation is exact layer-wise
// inference: each worker computes its own nodes' outputs of a layer from
// its neighbours' outputs of the layer below, fetched from their owners.
package dataparallel
