//go:build noasm || !amd64

package compress

// This build has no assembly: the quantiser runs its pure-Go twins.
const quantAsm = false

func bf16EncodeAVX512(*byte, []float32) { panic("compress: no assembly in this build") }

func bf16DecodeAVX512([]float32, *byte) { panic("compress: no assembly in this build") }

func quantEncodeRowsAVX512(*byte, *float32, int, int, int, uint64, uint64, float32) {
	panic("compress: no assembly in this build")
}

func quantDecodeRowsAVX512(*float32, *byte, int, int, int, uint64) {
	panic("compress: no assembly in this build")
}
