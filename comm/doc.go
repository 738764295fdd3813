// Package comm is the transport every distributed algorithm in graft talks
// through: a Communicator gives a worker its rank and the group's size, and
// the collectives partition-parallel training needs (all-to-all of
// variable-size byte buffers, in-place float32 all-reduce, broadcast,
// barrier), and point-to-point messages (Send, and Recv from one rank or
// any, with a deadline) for algorithms whose ranks do not move in step,
// such as a parameter server. Every call names its call site, and the communicator counts the
// bytes and time of each site and each peer, so the bytes a run reports are
// the bytes that crossed the transport.
//
// Implementations:
//   - Group: goroutines in one process (tests, simulation, one machine).
//   - TCP (Connect): processes on one or many machines, a full mesh of
//     authenticated TCP connections (optionally TLS) formed through a
//     rendezvous at rank 0, with checksummed frames, heartbeats and
//     deadlines, so that a lost peer is an error naming its rank, never a
//     hang. Two ranks that can map the same memory (one host) move the
//     same frames through a shared-memory segment instead (shmconn.go),
//     keeping their TCP connection as the control channel, unless either
//     asks for TCP (Options.Transport); where the system lets them read
//     each other's memory, the buffers of an all-to-all or a broadcast are
//     copied straight from the sender's memory (shmremote.go). The launch package fills its
//     Options from launcher conventions and GRAFT_TRANSPORT.
//   - MPI (build tag mpi): Open MPI through cgo.
//
// All three sum AllReduce in one canonical order (ring.go), so a run gives
// the same bits in one process and in many. WithLink wraps any of them to
// add the time an emulated network link would have taken. Rows gives any of
// them an all-to-all of rows picked from one shared buffer; a Group's
// receivers copy their rows straight from it, without a message per peer.
package comm
