// Package train is the run loop every graft trainer shares: epochs of
// optimiser steps, gradient accumulation, evaluation, model selection and
// early stopping, checkpoints that resume a run bit for bit, and an event
// after every epoch for the metrics recorder.
//
// A trainer supplies a [Stepper]: what one worker computes (the loss and
// parameter gradients of one micro-batch, and its share of an
// evaluation). The full-graph trainer (train/fullgraph) is one; mini-batch
// and parameter-server trainers are others. How workers combine their
// gradients and metrics is injected as a [Reducer] (nil for one worker),
// as etcd's raft takes its storage and transport: the loop itself does no
// I/O.
//
// Every worker of a run drives its own Loop with the same [Config]; the
// reductions make them take the same optimiser steps, keep the same best
// parameters and stop after the same epoch.
package train
