//go:build noasm || !amd64

package gemm

func bestKernel() *microKernel { return genericKernel }

// kernels lists every micro-kernel this build can run on this CPU.
func kernels() []*microKernel { return []*microKernel{genericKernel} }
