// Package graph is graft's graph structure: a CSR adjacency (int64 offsets,
// int32 neighbour ids), builders from edge lists, transposition, degrees,
// the normalised operators GNN layers aggregate with (GCN symmetric, mean),
// induced subgraphs, reordering, and seeded generators for tests and scale
// runs (stochastic block model with learnable features, R-MAT,
// Barabási–Albert, Erdős–Rényi).
package graph
