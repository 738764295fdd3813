// Package sample draws the mini-batches of sampled training: each a set of
// blocks, one per layer, that a model runs on (nn.Block), with the global
// ids of its input and output rows and the rows whose loss counts.
//
// Samplers are values of one interface, each in a file of its own that
// registers its command-line form (Register): neighbour sampling
// (GraphSAGE), and the layer-wise, subgraph and cluster samplers. A
// mini-batch depends only on the sampler's seed, the epoch and the batch's
// index, never on the number of threads or on timing: every random choice
// is drawn from a counter-based generator keyed by those numbers and by
// the layer and node it is for.
//
// A sampler puts its normalisation in the values of the block's operators
// (importance weights, GraphSAINT's aggregator normalisation, the rescaling
// that makes a sampled GCN row an unbiased estimate of the full one), so
// the layers need no code of their own for it.
package sample
