//go:build noasm || !amd64

package prefetch

// int32s, int64s and float32Rows are the assembly's pure-Go twins: a prefetch changes
// nothing a program can read, so they do nothing.
func int32s(base []int32, idx []int32) {}

func int64s(base []int64, idx []int32) {}

func float32Rows(base []float32, width int, idx []int32) {}
