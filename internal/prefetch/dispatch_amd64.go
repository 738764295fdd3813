//go:build !noasm

package prefetch

import "unsafe"

// In prefetch_amd64.s: PREFETCHT0 of base[idx[j]] for every j.

//go:noescape
func int32s(base []int32, idx []int32)

//go:noescape
func int64s(base []int64, idx []int32)

// rows prefetches every line of the rows idx[j] of rowBytes each from base.
//
//go:noescape
func rows(base unsafe.Pointer, rowBytes int, idx []int32)
