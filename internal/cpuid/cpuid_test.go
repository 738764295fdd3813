package cpuid

import "testing"

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
