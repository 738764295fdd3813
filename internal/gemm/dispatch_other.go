//go:build noasm || !amd64

package gemm

func bestKernel() *microKernel { return genericKernel }

// kernels lists every micro-kernel this build can run on this CPU.
func kernels() []*microKernel { return []*microKernel{genericKernel} }

// bestTransposer is the fastest transposer this build runs.
func bestTransposer() *transposer { return goTransposer }

// transposers lists every transposer this build can run on this CPU.
func transposers() []*transposer { return []*transposer{goTransposer} }

func bestBF16Kernel() *bfKernel { return genericBF16 }

// bfKernels lists every bf16 kernel this build can run on this CPU.
func bfKernels() []*bfKernel { return []*bfKernel{genericBF16, genericTiles, convertBF16} }

func bestZipper() *zipper { return goZipper }

func zippers() []*zipper { return []*zipper{goZipper} }
