//go:build noasm || !amd64

package compress

// This build has no assembly: top-k runs its pure-Go paths.
var bitmapAsm = false

func topkSelectAVX512(*uint32, *uint32, *uint64, int, int) (uint32, int) {
	panic("compress: no assembly in this build")
}

func topkSelectPairAVX512(*uint32, *uint32, *uint64, *uint64, int, int) bool {
	panic("compress: no assembly in this build")
}

func packRowsAVX512(*byte, int, *uint32, int, int, *byte, int, int) int {
	panic("compress: no assembly in this build")
}

func unpackRowsAVX512(*float32, *byte, int, *byte, int, int, int, int, float32) int {
	panic("compress: no assembly in this build")
}
