// Package sysstat reads what the operating system knows about this
// process's use of the machine: its CPU time, its peak resident memory,
// and the memory still available to it (AvailableMemory, which readers
// check before inflating large inputs).
// Benchmarks and reports quote CPU time beside wall time because other
// processes sharing the cores stretch wall time far more than CPU time, and
// peak RSS because it, not the Go heap, is what a machine must hold.
//
// Where a figure is unknown (no getrusage, no /proc) the readers return 0,
// which reports print as such, rather than an error every caller would
// have to carry.
package sysstat
