// Package hugepage asks the operating system to back large, long-lived
// buffers with transparent huge pages (2 MiB on x86-64) instead of 4 KiB
// pages. A kernel that hands out huge pages only where asked (Linux's
// transparent_hugepage "madvise" mode) otherwise gives the Go heap small
// pages, and code that streams through hundreds of megabytes (the SpMM
// gather over a feature matrix, the kernel pinning a sender's pages for a
// cross-process copy) pays a TLB miss and a page-table walk per 4 KiB.
//
// Advise and Collapse are hints: they cover only the 2 MiB-aligned
// interior of a slice of at least Threshold bytes, do nothing on other
// systems or where huge pages are off, and ignore errors. Advise asks
// that memory not yet written take huge pages at its first page faults;
// Collapse also moves memory already written to huge pages at once
// (MADV_COLLAPSE, Linux 6.1 and later), which is what the heap hands out
// when it reuses what an earlier allocation touched. Float32s and Uint16s
// allocate a large slice and collapse it (fresh memory, which the kernel
// cannot collapse, is advised instead); Bytes and Grow, for communication
// buffers grown on the exchange's path, only advise. Below Threshold they
// are plain make and append. Large arrays that are filled once and
// then read at random (a loaded graph and its features) are collapsed
// after they are filled.
package hugepage
