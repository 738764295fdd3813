// Command graft trains graph neural networks on one machine or many.
//
// Each subcommand lives in its own file: train (full-graph and
// partition-parallel training, in-process or as one worker of a
// multi-process job), partition, data, bench, launch and worker (multi-process
// jobs), decentral (one agent per node), and evaluate and predict (a model
// saved by train --save). Run `graft help` for the list,
// `graft help COMMAND` for a command's flags and `graft --version` for the
// build. A mistyped flag or command is one line naming the nearest ones.
package main
