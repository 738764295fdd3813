package cpuid

import "golang.org/x/sys/cpu"

// Level is the widest SIMD instruction set every assembly kernel may use.
type Level int

const (
	Generic Level = iota // pure Go
	AVX2                 // AVX2 + FMA
	AVX512               // AVX-512 F, BW, DQ, VL
)

func (l Level) String() string {
	switch l {
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return "generic"
}

// Detected is what this CPU supports, ignoring build tags.
var Detected = detect()

func detect() Level {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL && x.HasFMA:
		return AVX512
	case x.HasAVX2 && x.HasFMA:
		return AVX2
	}
	return Generic
}
