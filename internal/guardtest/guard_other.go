//go:build !unix

package guardtest

import "testing"

// Bytes skips the test: this system has no guard pages here.
func Bytes(t testing.TB, n int) []byte {
	t.Skip("no guard pages on this system")
	return nil
}

// Float32s skips the test: this system has no guard pages here.
func Float32s(t testing.TB, n int) []float32 {
	t.Skip("no guard pages on this system")
	return nil
}

// Uint16s skips the test: this system has no guard pages here.
func Uint16s(t testing.TB, n int) []uint16 {
	t.Skip("no guard pages on this system")
	return nil
}
