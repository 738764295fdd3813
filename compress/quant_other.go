//go:build noasm || !amd64

package compress

// This build has no assembly: the quantiser runs its pure-Go twins.
const quantAsm = false

func quantEncodeAVX512(*byte, []float32, float32, float32, uint32, uint64, uint64) {
	panic("compress: no assembly in this build")
}

func quantDecodeAVX512([]float32, *byte, float32, float32, *[16]float32, uint64) {
	panic("compress: no assembly in this build")
}

func minMaxAVX512([]float32) (float32, float32) { panic("compress: no assembly in this build") }

func bf16EncodeAVX512(*byte, []float32) { panic("compress: no assembly in this build") }

func bf16DecodeAVX512([]float32, *byte) { panic("compress: no assembly in this build") }
