package spmm

import "math"

// mulRowsGeneric is the pure-Go twin of the assembly row kernels.
func mulRowsGeneric(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool) {
	for r := 0; r+1 < len(offsets); r++ {
		yr := y[r*ldy : r*ldy+width]
		if !accumulate {
			clear(yr)
		}
		for p := offsets[r]; p < offsets[r+1]; p++ {
			v := float32(1)
			if values != nil {
				v = values[p]
			}
			axpy(v, x[int(indices[p])*ldx:][:width], yr)
		}
	}
}

// mulRowsBF16Generic is the pure-Go twin of the assembly bf16 row kernel.
func mulRowsBF16Generic(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool) {
	for r := 0; r+1 < len(offsets); r++ {
		yr := y[r*ldy : r*ldy+width]
		if !accumulate {
			clear(yr)
		}
		for p := offsets[r]; p < offsets[r+1]; p++ {
			v := float32(1)
			if values != nil {
				v = values[p]
			}
			xr := x[int(indices[p])*ldx:][:width]
			yr := yr[:len(xr)]
			for k, h := range xr {
				yr[k] += v * math.Float32frombits(uint32(h)<<16)
			}
		}
	}
}

// scatterGeneric is the pure-Go twin of the assembly scatter kernels.
func scatterGeneric(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int) {
	for i := 0; i+1 < len(offsets); i++ {
		xr := x[i*ldx:][:width]
		for p := offsets[i]; p < offsets[i+1]; p++ {
			v := float32(1)
			if values != nil {
				v = values[p]
			}
			axpy(v, xr, y[int(indices[p])*ldy:][:width])
		}
	}
}

// axpy computes y[k] += v*x[k], unrolled by four with the bounds checks
// hoisted out of the loop.
func axpy(v float32, x, y []float32) {
	y = y[:len(x)]
	k := 0
	for ; k+4 <= len(x); k += 4 {
		xs, ys := x[k:k+4:k+4], y[k:k+4:k+4]
		ys[0] += v * xs[0]
		ys[1] += v * xs[1]
		ys[2] += v * xs[2]
		ys[3] += v * xs[3]
	}
	for ; k < len(x); k++ {
		y[k] += v * x[k]
	}
}
