// Package pipeline trains a model split by layers over P stages, one rank
// each (layer-wise model parallelism, GPipe's schedule): stage s holds a
// contiguous range of the model's layers, their parameters and their
// optimiser state. Every mini-batch is M micro-batches; their activations
// flow forward through the stages and the gradients of those activations
// flow back, point to point (comm's Send and Recv); each stage accumulates
// its layers' gradients over the M micro-batches and takes one optimiser
// step per mini-batch.
//
// Every stage samples the same micro-batches: graft's samplers draw a
// batch from (seed, epoch, index) alone, so no block structure travels,
// only activations and their gradients. The first stage gathers the input
// features; the last one holds the labels and computes the loss, whose
// value travels back with the gradients, so every stage knows each
// micro-batch's loss. A micro-batch is one batch of the sampler, so a
// pipeline's optimiser step is one process's step with gradient
// accumulation over the same M batches (train.Config.Accumulate), and the
// two train alike: same losses and parameters to float rounding (the
// dropout at a stage boundary is applied by the layer after it, not fused
// into the activation before it: the same values, whose products may be
// summed in another order).
//
// The schedule, for P = 3 stages and M = 4 micro-batches (Fm is
// micro-batch m's forward pass through the stage's layers, Bm its backward
// pass, each drawn one time unit long):
//
//	time     0  1  2  3  4  5  6  7  8  9  10 11
//	stage 0  F0 F1 F2 F3 .  .  .  .  B3 B2 B1 B0 | step
//	stage 1  .  F0 F1 F2 F3 .  .  B3 B2 B1 B0 .  | step
//	stage 2  .  .  F0 F1 F2 F3 B3 B2 B1 B0 .  .  | step
//
// All forward passes, then all backward passes, last micro-batch first; a
// stage sends each output as soon as it is computed and never waits to
// send. Each stage is busy 2M units of the 2(M+P−1) a mini-batch takes:
// the idle share, the bubble, is (P−1)/(M+P−1) when the stages take equal
// time (Bubble), and more when they do not. Each stage keeps the
// activations of all M micro-batches until their backward pass (one copy
// of its layers per micro-batch, sharing their parameters): no
// recomputation.
//
// Evaluation is exact layer-wise inference, as the mini-batch trainer's:
// the other stages send their parameters to the first, which evaluates the
// whole model and shares the metrics, so that every stage selects the same
// epoch and stops at the same one. At the end the first stage gathers the
// whole model, at its best epoch. Checkpoints are not supported.
//
// Run trains with every stage a goroutine of one process; RunRank is one
// stage of a job of processes (over TCP), and the two give the same bits.
// A stage that dies or stalls is an error naming it on its neighbours
// within Options.Timeout, never a hang.
package pipeline
