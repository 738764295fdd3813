package gemm

import "unsafe"

// microGo is the pure-Go micro-kernel: c = a·b (or c += a·b when load) for an
// mr×nr tile, where step s of a is the mr values from a[s*astep] on and step s
// of b the nr values from b[s*nr] on.
func microGo(mr, nr, k int, a []float32, astep int, b, c []float32, ldc int, load bool) {
	var acc [16 * 32]float32
	acc2 := acc[:mr*nr]
	for s := 0; s < k; s++ {
		as := a[s*astep : s*astep+mr]
		bs := b[s*nr : s*nr+nr]
		for i, av := range as {
			row := acc2[i*nr : i*nr+nr]
			for j, bv := range bs {
				row[j] += av * bv
			}
		}
	}
	for i := 0; i < mr; i++ {
		dst := c[i*ldc : i*ldc+nr]
		src := acc2[i*nr : i*nr+nr]
		if load {
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(dst, src)
		}
	}
}

// genericKernel is the portable micro-kernel used without assembly.
var genericKernel = &microKernel{name: "generic", mr: 4, nr: 8, run: func(k int, a *float32, astep int, b, c *float32, ldc int, load bool, _ uintptr) {
	microGo(4, 8, k, unsafe.Slice(a, max(0, (k-1)*astep+4)), astep, unsafe.Slice(b, 8*k), unsafe.Slice(c, 3*ldc+8), ldc, load)
}}
