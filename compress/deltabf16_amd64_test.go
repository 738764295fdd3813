//go:build !noasm && !amd64.v3

package compress

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// With the reconstructions in bfloat16 the AVX-512 and AVX2 kernels send
// the Go loops' messages and keep their states, bit for bit, over random
// shapes (messages of one block and of several), bit widths, thresholds
// and staleness bounds, on rows with NaNs, infinities and wide ranges.
func TestDeltaBF16KernelsMatchGo(t *testing.T) {
	for name, k := range deltaKernelsHere(t) {
		t.Run(name, func(t *testing.T) {
			defer func(v int) { deltaKernel = v }(deltaKernel)
			r := rand.New(rand.NewPCG(21, 7))
			special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), 3e38, 1e-45}
			for trial := range 40 {
				rows, width := 1+r.IntN(40), r.IntN(100)
				if trial%5 == 0 {
					rows = 200 + r.IntN(200) // several blocks
				}
				bits := []int{1, 2, 4, 8, 32}[trial%5]
				spec := fmt.Sprintf("delta:%d:%g:%d", bits, []float64{0, 0, 0.05}[trial%3], []int{0, 3}[trial%2])
				ends := [2][2]*Delta{} // [kernel, Go][sender, receiver]
				for i := range ends {
					for j := range ends[i] {
						ends[i][j] = newDeltaBF16(t, spec)
					}
				}
				src := newDeltaSource(r, rows, width)
				outs := [2][]float32{make([]float32, rows*width), make([]float32, rows*width)}
				for step := range 5 {
					x := slices.Clone(src.next(width))
					if trial%4 == 1 {
						for i := range x {
							if r.IntN(7) == 0 {
								x[i] = special[r.IntN(len(special))]
							}
						}
					}
					key := Key{Step: step, Layer: 1, Backward: step%2 == 1}
					var msgs [2][]byte
					for i, kernel := range []int{k, deltaGo} {
						deltaKernel = kernel
						msgs[i] = ends[i][0].Encode(nil, x, rows, width, 1, key)
						if err := ends[i][1].Decode(outs[i], rows, width, 1, key, msgs[i]); err != nil {
							t.Fatal(err)
						}
					}
					if !bytes.Equal(msgs[0], msgs[1]) {
						t.Fatalf("%s %d×%d step %d: the kernel's message differs from Go's", spec, rows, width, step)
					}
					if !slices.Equal(float32Bits(outs[0]), float32Bits(outs[1])) {
						t.Fatalf("%s %d×%d step %d: the kernel decodes other rows", spec, rows, width, step)
					}
					for j := range 2 {
						kst, kerr := ends[0][j].StreamState()
						gst, gerr := ends[1][j].StreamState()
						if kerr != nil || gerr != nil || !bytes.Equal(kst, gst) {
							t.Fatalf("%s %d×%d step %d: the kernel's state differs from Go's", spec, rows, width, step)
						}
					}
				}
			}
		})
	}
}
