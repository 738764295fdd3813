// Package memacct is a process's account of the buffers its computations
// keep from one step to the next, by kind: the bytes each kind holds now
// and the most it has held. The code that grows or releases such a buffer
// reports the change; the job's memory account (the `memory` object of
// `graft train --json`) reads the peaks beside what it can size directly
// (graph, features, parameters).
//
// It counts kept buffers only, not every allocation: a temporary that is
// garbage after one call is part of the rest the account leaves to the
// runtime. A run measures from a Mark, so that earlier runs of the same
// process do not count.
package memacct
