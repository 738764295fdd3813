// Package partition splits a graph's nodes into K parts for
// partition-parallel training, where every worker owns one part and
// exchanges the rows its neighbours need once per layer.
//
// One interface, [Partitioner], has four implementations:
//
//   - [Random]: seeded and balanced; the baseline every other method must beat.
//   - [Stream]: a one-pass Fennel partitioner that sees each node's adjacency
//     once, so its memory is the assignment plus one row.
//   - [Multilevel]: coarsening by heavy-edge matching, recursive bisection of
//     the coarsest graph, then k-way boundary refinement while uncoarsening,
//     in pure Go. It balances node weight and optionally a second constraint
//     (for example training nodes, as DGL's balance_ntypes does).
//   - METIS 5 itself through cgo, in builds with the metis tag
//     (Debian package libmetis-dev).
//
// [Evaluate] measures any assignment: edge cut (each undirected edge counted
// once, as METIS counts it), per-part nodes, edges, training nodes, boundary
// and halo nodes, the rows each pair of parts exchanges per layer, and the
// imbalance (max/mean) of each. [BuildLayout] turns an assignment into the
// per-part local graphs the partition-parallel trainer runs on.
//
// [ReadAssignment] and [WriteAssignment] use METIS's own format (one part id
// per line), so gpmetis output and ours are interchangeable; [WriteMETISGraph]
// writes a graph in the format gpmetis reads.
//
// The partitioners and the report treat the graph as undirected: both
// directions of every edge must be stored (graph.Symmetrize makes it so).
package partition
