//go:build !noasm

package gemm

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestEVEXMatchesAssembler checks evex, which TestBF16Encodings trusts,
// against the Go assembler: the AVX-512 float32 kernel's code must hold
// its encoding of VFMADD231PS (EVEX.512.66.0F38.W0 B8 /r) for registers
// with and without the high-bank bits.
func TestEVEXMatchesAssembler(t *testing.T) {
	fn := kernel12x32AVX512
	// A func value points at a word holding the code address.
	code := abi0Code(t, **(**unsafe.Pointer)(unsafe.Pointer(&fn)), 4096)
	for _, r := range [][3]int{{0, 26, 24}, {1, 26, 25}, {23, 31, 25}, {22, 31, 24}, {9, 30, 25}} {
		if want := evex(0xb8, 1, r[0], r[1], r[2]); !bytes.Contains(code, want) {
			t.Errorf("vfmadd231ps zmm%d, zmm%d, zmm%d: % x not in the assembled kernel", r[0], r[1], r[2], want)
		}
	}
}

// abi0Code returns n bytes of the assembly body behind the Go-callable
// wrapper at pc: the target of the wrapper's call whose code starts by
// loading the first argument (MOVQ 8(SP), CX), as the kernel does.
func abi0Code(t *testing.T, pc unsafe.Pointer, n int) []byte {
	wrapper := unsafe.Slice((*byte)(pc), 96)
	for i := 0; i+5 <= len(wrapper); i++ {
		if wrapper[i] != 0xe8 {
			continue
		}
		rel := int32(uint32(wrapper[i+1]) | uint32(wrapper[i+2])<<8 | uint32(wrapper[i+3])<<16 | uint32(wrapper[i+4])<<24)
		target := unsafe.Add(pc, i+5+int(rel))
		if body := unsafe.Slice((*byte)(target), n); bytes.HasPrefix(body, []byte{0x48, 0x8b, 0x4c, 0x24, 0x08}) {
			return body
		}
	}
	t.Fatal("no call to the assembly body in the wrapper")
	return nil
}
