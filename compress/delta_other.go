//go:build noasm || !amd64 || amd64.v3

package compress

// This build runs the delta codec's Go loops (see delta_amd64.go).
const deltaKernel = deltaGo

func deltaEncodeRows(*byte, *float32, *float32, int, int, int) {
	panic("compress: no delta kernels in this build")
}

func deltaApplyRows(*float32, *float32, *byte, int, int, int, bool) {
	panic("compress: no delta kernels in this build")
}
