package guardtest

import (
	"runtime/debug"
	"testing"
	"unsafe"
)

// The byte after the slice is inaccessible: reading it faults.
func TestReadingPastTheEndFaults(t *testing.T) {
	for _, n := range []int{0, 1, 100, 4096, 5000} {
		b := Bytes(t, n)
		if len(b) != n {
			t.Fatalf("Bytes(%d) has %d bytes", n, len(b))
		}
		for i := range b {
			b[i] = byte(i) // writable
		}
		if !faults(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), n)) {
			t.Fatalf("Bytes(%d): the byte past the end is readable", n)
		}
	}
	if f := Float32s(t, 3); len(f) != 3 || !faults(unsafe.Pointer(uintptr(unsafe.Pointer(&f[2]))+4)) {
		t.Fatal("Float32s(3) is not 3 floats before a guard page")
	}
}

func faults(p unsafe.Pointer) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { faulted = recover() != nil }()
	_ = *(*byte)(p)
	return false
}
