package compress

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/huff0"
)

// huffBlocks is blocks of many sizes and spreads of bytes: uniform,
// skewed (geometric), a few symbols, one symbol, 2-bit codes packed four
// to a byte as delta coding's are, and one of every byte value.
func huffBlocks(r *rand.Rand) map[string][]byte {
	blocks := map[string][]byte{}
	for _, n := range []int{1, 2, 11, 12, 13, 63, 64, 65, 127, 1000, 4097, 65536 + 3, huffBlock} {
		for _, kind := range []string{"uniform", "geometric", "few", "one", "codes", "every"} {
			b := make([]byte, n)
			for i := range b {
				switch kind {
				case "uniform":
					b[i] = byte(r.Uint32())
				case "geometric":
					k := 0
					for r.IntN(3) != 0 && k < 255 {
						k++
					}
					b[i] = byte(k)
				case "few":
					b[i] = []byte{3, 200, 17}[r.IntN(3)*r.IntN(2)]
				case "one":
					b[i] = 42
				case "codes":
					for j := range 4 {
						c := []byte{0, 1, 1, 1, 2, 2, 2, 3}[r.IntN(8)]
						b[i] |= c << (2 * j)
					}
				case "every":
					b[i] = byte(i)
					if i >= 256 {
						b[i] = byte(r.NormFloat64() * 20)
					}
				}
			}
			blocks[fmt.Sprintf("%s/%d", kind, n)] = b
		}
	}
	return blocks
}

// huffCoder writes what huff0.Compress4X writes, byte for byte (with the
// same errors), whichever encoder runs (the kernel where the CPU has it,
// encodeGo), and huff0 decodes it.
func TestHuffCoderMatchesHuff0(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 1))
	var h huffCoder
	compared := 0
	for name, b := range huffBlocks(r) {
		var s huff0.Scratch
		s.Reuse = huff0.ReusePolicyNone
		want, _, wantErr := huff0.Compress4X(b, &s)
		for _, asm := range []bool{false, huffAsm} {
			prefix := []byte("prefix")
			got, err := h.compressWith(prefix, b, asm)
			if err != wantErr || !bytes.Equal(got[:len(prefix)], prefix) {
				t.Fatalf("%s (asm %v): error %v, huff0 %v", name, asm, err, wantErr)
			}
			if err != nil {
				if len(got) != len(prefix) {
					t.Fatalf("%s (asm %v): %v, yet %d bytes appended", name, asm, err, len(got)-len(prefix))
				}
				continue
			}
			compared++
			if !bytes.Equal(got[len(prefix):], want) {
				t.Fatalf("%s (asm %v): %d bytes, huff0 %d, or other bytes", name, asm, len(got)-len(prefix), len(want))
			}
			d, rest, err := huff0.ReadTable(got[len(prefix):], nil)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := d.Decoder().Decompress4X(make([]byte, 0, len(b)), rest); err != nil || !bytes.Equal(out, b) {
				t.Fatalf("%s (asm %v): huff0 decodes another block (%v)", name, asm, err)
			}
		}
	}
	if compared < 20 {
		t.Errorf("only %d coded blocks compared", compared)
	}
}
