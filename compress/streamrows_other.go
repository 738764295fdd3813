//go:build noasm || !amd64

package compress

// This build has no assembly: the streams are split and joined in Go.
var deltaRowsAsm = false

func gatherDeltaRowsAVX512(*byte, *byte, int, int, int, *deltaRowsPlan) {
	panic("compress: no assembly in this build")
}

func scatterDeltaRowsAVX512(*byte, *byte, int, int, int, *deltaRowsPlan) {
	panic("compress: no assembly in this build")
}
