package bf16

// encodeGeneric is the pure-Go twin of the assembly Encode.
func encodeGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = FromFloat32(f)
	}
}

// decodeGeneric is the pure-Go twin of the assembly Decode.
func decodeGeneric(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = ToFloat32(h)
	}
}

// decodeRowsGeneric is the pure-Go twin of the assembly DecodeRows.
func decodeRowsGeneric(dst []float32, ldd int, src []uint16, lds, rows, cols int) {
	for r := 0; r < rows; r++ {
		decodeGeneric(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
	}
}

// gatherGeneric is the pure-Go twin of the assembly Gather.
func gatherGeneric(dst []float32, ldd int, src []uint16, lds, width int, idx []int32) {
	for i, r := range idx {
		decodeGeneric(dst[i*ldd:i*ldd+width], src[int(r)*lds:int(r)*lds+width])
	}
}
