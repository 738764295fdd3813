package spmm

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
			xr := x[int(indices[p])*ldx:][:width]
			for k, xv := range xr {
				yr[k] += v * xv
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
			yr := y[int(indices[p])*ldy:][:width]
			for k, xv := range xr {
				yr[k] += v * xv
			}
		}
	}
}
