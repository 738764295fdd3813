//go:build noasm || !amd64

package prefetch

import "unsafe"

// int32s, int64s and rows are the assembly's pure-Go twins: a prefetch changes
// nothing a program can read, so they do nothing.
func int32s(base []int32, idx []int32) {}

func int64s(base []int64, idx []int32) {}

func rows(base unsafe.Pointer, rowBytes int, idx []int32) {}
