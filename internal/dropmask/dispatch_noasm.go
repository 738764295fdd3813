//go:build noasm || !amd64

package dropmask

const haveAsm = false

func applyAVX512(y, x []float32, key, base uint64, thr int32, scale float32) {
	panic("dropmask: no assembly in this build")
}
