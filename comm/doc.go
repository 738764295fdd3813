// Package comm is the transport every distributed algorithm in graft talks
// through: a Communicator gives a worker its rank and the group's size, and
// the collectives partition-parallel training needs (all-to-all of
// variable-size byte buffers, in-place float32 all-reduce, broadcast,
// barrier). Every call names its call site, and the communicator counts the
// bytes and time of each site and each peer, so the bytes a run reports are
// the bytes that crossed the transport.
//
// Implementations: Local (goroutines in one process, for tests, simulation
// and one-machine runs) here; others live beside it. WithLink wraps any of
// them to add the time an emulated network link would have taken.
package comm
