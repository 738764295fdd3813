// Package freelist keeps reusable values across calls and across garbage
// collections. Kernels reuse task structs and scratch memory so that a
// training step allocates nothing; a sync.Pool is emptied by every GC, after
// which each pooled value is allocated again.
package freelist
