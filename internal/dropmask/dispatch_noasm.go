//go:build noasm || !amd64

package dropmask

import "github.com/graft-gnn/graft/internal/cpuid"

// kernelFor returns nil: this build has no assembly.
func kernelFor(cpuid.Level) func(y, x []float32, key, base uint64, thr int32, scale float32) {
	return nil
}
