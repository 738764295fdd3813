// Package prefetch asks the CPU to start loading elements of a slice into
// its caches before they are read: Int32s and Int64s take the slice and
// the indices of the elements to come. A loop of dependent random reads
// (a lookup table of nodes, say) waits for each cache miss alone; with the
// elements of the next few dozen reads prefetched while it works, their
// misses overlap. A prefetch changes no value and never faults, so the
// pure-Go twin, which the noasm build and other CPUs use, does nothing;
// on amd64 it is PREFETCHT0 in assembly.
package prefetch
