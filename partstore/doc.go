// Package partstore stores a partitioned node-classification problem as
// one directory per part, so that each worker of a job reads only its own
// share: `graft partition --out DIR/` writes it, `graft train --part-dir DIR`
// reads it.
//
// DIR/manifest.json describes the set; DIR/part-K/ holds three files of one
// container format: topology.bin (owned and halo ids, the local adjacency,
// the send lists and every local column's degree), features.bin (the owned
// rows of the node features, dense or sparse) and labels.bin (the owned
// nodes' labels and the split as local rows). A container is the 8-byte
// magic "GRAFTPT1", a uint32 count, then that many arrays, each a name
// (uint8 length and bytes), a type (1 int32, 2 int64, 3 float32), a uint64
// element count and the little-endian elements; it ends with the CRC-32C of
// everything before. Files are written atomically (internal/atomicfile) and
// the manifest last, so a directory without one is visibly incomplete.
// ReadPart checks the checksum, every length and every index before using
// any of it, and never panics. The manifest records every file's SHA-256,
// which ReadPart checks, and the part is checked against the manifest;
// written with a job secret, the manifest carries an HMAC of itself
// (Manifest.Verify), which authenticates the set.
package partstore
