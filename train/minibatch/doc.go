// Package minibatch trains on sampled mini-batches: every optimiser step
// draws batches from a sample.Sampler (neighbour, layer-wise, subgraph or
// cluster sampling), gathers their input features, and runs the model on
// their blocks. Evaluation is exact: layer-wise inference over every node
// with its whole neighbourhood, a slice of nodes at a time, as DGL and PyG
// do for GraphSAGE, so its accuracy does not depend on the sampler.
//
// Sampling and feature gathering run ahead of the compute in a background
// goroutine, a few batches deep, so the model waits only when sampling is
// slower than compute; batches are recycled, so after the first epoch an
// epoch allocates close to nothing. The Stepper is a train.Stepper: the
// shared run loop drives it, with gradient accumulation, model selection,
// checkpoints and metrics as for every trainer.
package minibatch
