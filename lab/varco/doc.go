// Command varco is an experiment tool, not part of graft or its API: it
// exists to produce docs/varco.md's evidence and may change with it. It
// lives under lab/, beside the other experiment tools, so that the
// product's tree holds only what graft ships.
//
// It runs the VARCO experiments (issue 5: partition-parallel training with
// variable-rate compressed communication) and turns their results into the
// table and plots under docs/varco.
//
//	varco run    [flags]   train every (dataset, parts, partition, seed, config) cell, appending to a JSONL file
//	varco report [flags]   read the JSONL file, write results.md and the plots
//	varco speed  [flags]   the speed checks (epoch times, codec share)
//
// Runs drive fullgraph.RunInProcess directly (one goroutine per worker),
// so all of a cell's configurations see the same graph, split and layout.
// A run already in the results file is skipped, so an interrupted sweep
// resumes where it stopped. scripts/varco.sh is the one command that
// regenerates the committed results.
package main
