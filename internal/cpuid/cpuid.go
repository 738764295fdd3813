package cpuid

import (
	"fmt"
	"os"

	"golang.org/x/sys/cpu"
)

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

// Env names the variable that caps the level below what the CPU offers
// (generic, avx2, avx512 or amx), so that a run can be repeated bit for bit
// on the kernels of a smaller CPU: avx512 keeps AVX-512 and turns AMX off.
const Env = "GRAFT_SIMD"

// Detected is what this CPU supports, ignoring build tags, capped by Env.
var Detected, EnvErr = capped(detect(), os.Getenv(Env))

// BF16 reports AVX512_BF16 (VDPBF16PS) on a CPU whose level, after Env's
// cap, is AVX512; capping below avx512 turns it off with the rest.
var BF16 = Detected == AVX512 && cpu.X86.HasAVX512BF16

// AMX reports AMX-BF16 tiles (TDPBF16PS) that the OS lets this process use,
// on a CPU with BF16 after Env's cap; GRAFT_SIMD=avx512 turns them off.
var AMX = BF16 && os.Getenv(Env) != AVX512.String() &&
	cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && requestAMX()

// Vendor is the CPU's vendor string ("GenuineIntel", "AuthenticAMD"), or
// empty off amd64. Kernels whose best memory-prefetch strategy differs
// between vendors' cores choose by it (see spmm's farGatherBytes).
var Vendor = vendor()

// Intel reports an Intel CPU.
var Intel = Vendor == "GenuineIntel"

// AMD reports an AMD CPU.
var AMD = Vendor == "AuthenticAMD"

// Family is the CPU's family as the vendors number it (CPUID leaf 1's
// base family, plus its extended family when the base is 15), or 0 off
// amd64: on AMD, 0x19 for Zen 3 and Zen 4, 0x1A for Zen 5. Kernels whose
// best prefetch differs between generations of one vendor's cores
// choose by it.
var Family = family()

// LastLevelCache is the size in bytes of the largest data cache CPUID
// describes (the L3 a core shares with others, on most CPUs), or 0 where
// CPUID does not say, off amd64.
var LastLevelCache = lastLevelCache()

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

// capped lowers l to the level named by cap, if lower; EnvErr reports a
// name that is not a level.
func capped(l Level, cap string) (Level, error) {
	if cap == "" || cap == "amx" {
		return l, nil
	}
	for _, c := range []Level{Generic, AVX2, AVX512} {
		if c.String() == cap {
			return min(l, c), nil
		}
	}
	return l, fmt.Errorf("%s=%q: want generic, avx2, avx512 or amx", Env, cap)
}
