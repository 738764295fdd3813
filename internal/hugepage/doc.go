// Package hugepage asks the operating system to back large, long-lived
// buffers with transparent huge pages (2 MiB on x86-64) instead of 4 KiB
// pages. A kernel that hands out huge pages only where asked (Linux's
// transparent_hugepage "madvise" mode) otherwise gives the Go heap small
// pages, and code that streams through hundreds of megabytes (the SpMM
// gather over a feature matrix, the kernel pinning a sender's pages for a
// cross-process copy) pays a TLB miss and a page-table walk per 4 KiB.
//
// Advise is a hint: it covers only the 2 MiB-aligned interior of a slice
// of at least Threshold bytes, does nothing on other systems or where huge
// pages are off, and ignores errors. Bytes, Float32s, Uint16s and Grow allocate a
// large slice and advise it before anything writes to it, so that its
// first page faults can take huge pages. Go hands out a large allocation
// that comes fresh from the operating system without touching it, so the
// advice takes effect at those faults; memory the heap reuses (already
// touched by an earlier allocation) keeps its pages, and the advice then
// only lets the kernel's background collapse (khugepaged) merge them
// later. Below Threshold these functions are plain make and append.
package hugepage
