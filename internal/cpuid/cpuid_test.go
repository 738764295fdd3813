package cpuid

import (
	"os"
	"testing"

	"golang.org/x/sys/cpu"
)

func TestCapped(t *testing.T) {
	for _, c := range []struct {
		have  Level
		cap   string
		want  Level
		isErr bool
	}{
		{AVX512, "", AVX512, false},
		{AVX512, "avx2", AVX2, false},
		{AVX512, "generic", Generic, false},
		{AVX2, "avx512", AVX2, false}, // never raised above the CPU
		{AVX512, "sse", AVX512, true},
	} {
		got, err := capped(c.have, c.cap)
		if got != c.want || (err != nil) != c.isErr {
			t.Errorf("capped(%v, %q) = %v, %v; want %v, error %v", c.have, c.cap, got, err, c.want, c.isErr)
		}
	}
}

// BF16 rides on AVX-512: a cap below it turns the instruction off too.
func TestBF16NeedsAVX512(t *testing.T) {
	if BF16 && Detected != AVX512 {
		t.Errorf("BF16 with level %v", Detected)
	}
}

// AMX rides on BF16, and amx as a cap caps nothing: it names the top.
func TestAMXNeedsBF16(t *testing.T) {
	if AMX && !BF16 {
		t.Error("AMX without BF16")
	}
	if got, err := capped(AVX512, "amx"); got != AVX512 || err != nil {
		t.Errorf(`capped(AVX512, "amx") = %v, %v`, got, err)
	}
	if os.Getenv(Env) == AVX512.String() && AMX {
		t.Errorf("%s=avx512 and AMX on", Env)
	}
	if BF16 && cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && os.Getenv(Env) != AVX512.String() && !AMX && InEffect() != Generic {
		t.Log("the CPU has AMX-BF16 but Linux did not grant the tiles: the AMX kernel is not tested here")
	}
}
