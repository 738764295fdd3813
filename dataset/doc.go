// Package dataset reads the graph datasets graft trains on and splits their
// nodes for training, validation and testing.
//
// Readers cover the formats users have: LINQS .content/.cites (Cora,
// CiteSeer), numpy .npy/.npz in the gnn-benchmark and heterophilous-graphs
// layouts, Geom-GCN-style mask files, OGB's raw node-property layout,
// scipy.sparse.save_npz matrices (as a graph's adjacency or as features),
// and plain edge lists, whose node ids may be any tokens: ids that are not
// node numbers are renumbered in sorted order and kept in Dataset.NodeIDs.
// Labels and features can come from files of their own, keyed by those ids
// (NodeFiles, LoadWith). Every reader returns an error naming the file and the
// line or array at fault instead of panicking, and each has a fuzz target.
//
// Whatever the source, a Dataset's graph follows the convention of the GNN
// literature: undirected (both directions stored), without duplicate edges
// and without self loops. Features stay in the form they were read, sparse
// for bag-of-words sources; DenseFeatures gives a dense copy.
//
// Load resolves a registry name (cora, citeseer, amazon-computers,
// amazon-photo, coauthor-cs, tolokers, cnr-2000) under a data directory
// (--data-dir or $GRAFT_DATA) or reads any supported path. Cora is also
// compiled into the binary, so Load("cora", "") works with no data at all.
//
// Dataset.Split turns a specification (see SplitSpecs) into a Split: the
// public split, fixed splits the source ships, seeded per-class or
// fractional random splits, or masks from a file.
package dataset
