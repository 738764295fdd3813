//go:build noasm || !amd64

package dropmask

import "github.com/graft-gnn/graft/internal/cpuid"

// kernelLevel returns Generic: this build has no assembly.
func kernelLevel(cpuid.Level) cpuid.Level { return cpuid.Generic }

func applyAVX512(y, x []float32, key, base uint64, thr int32, scale float32) {
	panic("dropmask: no assembly in this build")
}

func applyAVX2(y, x []float32, key, base uint64, thr int32, scale float32) {
	panic("dropmask: no assembly in this build")
}

func keepBitsAVX512(dst []uint64, n int, key, base uint64, thr int32) {
	panic("dropmask: no assembly in this build")
}

func keepBitsAVX2(dst []uint64, n int, key, base uint64, thr int32) {
	panic("dropmask: no assembly in this build")
}
