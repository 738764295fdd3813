// Package graph is graft's graph structure: a CSR adjacency (int64 offsets,
// int32 neighbour ids), builders from edge lists, transposition, degrees,
// the normalised operators GNN layers aggregate with (GCN symmetric, mean),
// induced subgraphs, reordering, and seeded generators for tests and scale
// runs (stochastic block model with learnable features, R-MAT,
// Barabási–Albert, Erdős–Rényi).
//
// Every Graph built here has sorted rows without duplicates; undirected
// graphs store both directions. Operations return new graphs and leave their
// receiver alone, except where a result is documented to share storage (the
// normalised matrices share the adjacency's Offsets and Neighbors).
//
// The normalised operators come in two forms: Graph.GCNNorm and
// Graph.MeanNorm for a whole graph, and GCNNormWithDegrees and
// MeanNormWithDegrees for any tensor.CSR with degrees from elsewhere, such as
// a partition's block of rows (owned nodes) by columns (owned and halo nodes)
// normalised with the whole graph's degrees.
//
// Builders and generators run in parallel on internal/parallel's pool, and
// their results do not depend on the number of workers: generators split
// their work into chunks fixed by the parameters, each drawing from its own
// PCG stream derived from the seed (see chunkRNG).
package graph
