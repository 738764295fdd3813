// Package optim holds graft's optimiser update rules, once: SGD with optional
// (Nesterov) momentum, Adam, AdamW and AMSGrad, with PyTorch's semantics and
// state_dict buffer names. nn's Optimizer (float32 parameters under a
// learning-rate schedule) and train/decentral's agents (float64 parameters,
// stepped from the consensus mix) both run these, so a rule is written and
// tested in one place.
//
// A State is one parameter's memory: its moment buffers and step count.
// State.Step writes x = base − (the rule's step), reading every element of
// base before writing the same element of x, so base may alias x (a plain
// optimiser step) or hold something else (a decentralised agent's mixed
// parameters). The caller passes the step's learning rate, so schedules
// stay with the caller.
//
// Whatever the element type, every element's arithmetic is done in float64
// and rounded once into x and the buffers. For float32 this is what nn has
// always done, and its training runs are pinned bit for bit to it; keep the
// order of the operations when editing a rule.
package optim
