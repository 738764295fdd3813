// Package layers holds the test that keeps graft's package graph layered:
// kernels and the tensor and graph types at the bottom; the training
// engine, transport, compression, partitioning and data readers above
// them; the halo exchange and part store above those; the run loop; the
// trainers; the job; the command and the experiment tools on top. A
// package imports only packages of lower layers.
package layers
