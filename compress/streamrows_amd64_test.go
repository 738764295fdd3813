//go:build !noasm

package compress

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/graft-gnn/graft/internal/guardtest"
)

// The kernels read the plan at the offsets streamrows_amd64.s names.
func TestShortRowsPlanLayout(t *testing.T) {
	var p shortRowsPlan
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"hdrIdx", unsafe.Offsetof(p.hdrIdx), 0}, {"codeIdx", unsafe.Offsetof(p.codeIdx), 64},
		{"outIdx", unsafe.Offsetof(p.outIdx), 320}, {"hdrMask", unsafe.Offsetof(p.hdrMask), 640},
		{"codeMask", unsafe.Offsetof(p.codeMask), 680}, {"winMask", unsafe.Offsetof(p.winMask), 840},
		{"codeOut", unsafe.Offsetof(p.codeOut), 880}, {"outHdr", unsafe.Offsetof(p.outHdr), 912},
		{"outCode", unsafe.Offsetof(p.outCode), 952},
	} {
		if c.got != c.want {
			t.Errorf("shortRowsPlan.%s at %d, the kernels read it at %d", c.name, c.got, c.want)
		}
	}
}

// The AVX-512 kernels split rows into streams and join them back as the
// Go loops do, at every width of codes and for messages of every number
// of rows up to a few groups, reading and writing nothing past the
// buffers (each ends at a page that faults when touched).
func TestShortRowsKernelsMatchGo(t *testing.T) {
	if !shortRowsAsm {
		t.Skip("no AVX-512 VBMI on this CPU")
	}
	defer func(v bool) { shortRowsAsm = v }(shortRowsAsm)
	r := rand.New(rand.NewPCG(31, 1))
	for w := 1; w <= 16; w++ {
		for _, k := range []int{0, 1, 15, 16, 17, 31, 32, 33, 47, 64, 100, 257} {
			rb := 4 + w
			rows := guardtest.Bytes(t, k*rb)
			for i := range rows {
				rows[i] = byte(r.Uint32())
			}
			l := rowLayout{0, rb, 4}
			shortRowsAsm = true
			got := guardtest.Bytes(t, k*rb)
			l.gatherRows(got, rows)
			shortRowsAsm = false
			want := make([]byte, k*rb)
			l.gatherRows(want, rows)
			if !bytes.Equal(got, want) {
				t.Fatalf("w %d, %d rows: the kernel gathers other streams", w, k)
			}
			shortRowsAsm = true
			back := guardtest.Bytes(t, k*rb)
			l.scatterRows(back, want, nil)
			if !bytes.Equal(back, rows) {
				t.Fatalf("w %d, %d rows: the kernel scatters other rows", w, k)
			}
		}
	}
}
