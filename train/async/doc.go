// Package async trains with an asynchronous parameter server: S server
// ranks each hold a shard of the model's parameters and its optimiser
// state, and apply every gradient as it arrives; N worker ranks each train
// on their own share of the training seeds with a sampled mini-batch
// stepper, push each gradient to the servers tagged with the version of
// the parameters it was computed from, and take back the parameters as
// they are then. No worker waits for another.
//
// A gradient's staleness τ is its shard's version when it arrives minus
// the version it was computed from: the number of other workers' updates
// applied in between. A Rule scales the learning rate by τ (1/τ, as in
// staleness-aware asynchronous SGD; 1/(1+cτ); or not at all) or drops
// every stale gradient, and a gradient staler than the bound is dropped
// and counted; dropped gradients count toward no epoch. With
// Settings.PerUpdate K a shard applies the mean of every K gradients it
// keeps as one update: with the rule that drops stale gradients,
// K-batch-sync SGD. The servers keep
// a histogram of τ, which the run reports per epoch.
//
// The core (Shard, Rule, Histogram) does no I/O; Serve and Work are thin
// loops over comm's point-to-point messages, so the same code runs in one
// process (Run) and over TCP. A server that dies or stalls is an error on
// every worker within the request deadline, never a hang.
package async
