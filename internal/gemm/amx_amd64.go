//go:build !noasm

package gemm

// kernel32x32AMX is microTilesGo(32, 32, …) on AMX tiles with TDPBF16PS:
// a holds 32 rows of steps pairs (steps a multiple of 16), b steps × 32
// columns. It configures the tiles, runs and releases them within the
// call, so no tile state outlives it or crosses a goroutine switch.
//
//go:noescape
func kernel32x32AMX(steps int, a, b *uint32, c *float32, ldc int, load bool, pf uintptr)

var amxKernel = &bfKernel{name: "amx", mr: 32, nr: 32, rowsA: true, stepAlign: 16, run: kernel32x32AMX}
