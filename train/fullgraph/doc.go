// Package fullgraph trains a graph neural network on a whole graph at once:
// every epoch is one forward pass over all nodes, one backward pass and one
// optimiser step, followed by an evaluation pass.
//
// The [Trainer] is written for N workers, each holding one partition of the
// graph, and a single process is the one-worker case rather than a separate
// code path. A worker's [Data] describes only its own rows: an [nn.Graph]
// (local operators and, with peers, a halo exchange), the features and labels
// of the rows it owns, and which of them are in the training, validation and
// test sets. Everything that must agree across workers goes through a
// [Reducer]: the global number of training nodes (so each worker's loss is
// normalised by it and the summed gradients are exact), the parameter
// gradients and loss of every step, and the metric sums of every evaluation.
// With the same [Config] every worker then takes the same optimiser steps,
// keeps the same best parameters and stops at the same epoch. A nil Reducer
// means one worker and costs nothing.
//
// The Trainer does no I/O: progress, metrics files and saving are the
// caller's business, through the per-epoch callback of [Trainer.Run].
//
// Buffers are allocated in the first epoch and reused, so later epochs
// allocate almost nothing (see TestEpochAllocations).
package fullgraph
