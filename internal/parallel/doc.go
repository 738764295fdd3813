// Package parallel runs a loop body over index ranges on a fixed pool of
// worker goroutines without allocating per call, so that compute kernels can
// be parallel and still allocation-free.
//
// The calling goroutine always takes part in the work. Idle workers are
// recruited with non-blocking sends, so a call made while every worker is busy
// (for example from inside another parallel loop) simply runs on the caller:
// nesting can never deadlock.
package parallel
