// Command graft trains graph neural networks on one machine or many.
//
// Each subcommand lives in its own file: train (full-graph and
// partition-parallel training, in-process or as one worker of a
// multi-process job), partition, data, bench, launch and worker (multi-process
// jobs), and decentral (one agent per node). Run `graft help` for the list.
package main
