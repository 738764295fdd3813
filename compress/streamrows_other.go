//go:build noasm || !amd64

package compress

// This build has no assembly: the streams are split and joined in Go.
var shortRowsAsm = false

func gatherShortRowsAVX512(*byte, *byte, int, int, int, *shortRowsPlan) {
	panic("compress: no assembly in this build")
}

func scatterShortRowsAVX512(*byte, *byte, int, int, int, *shortRowsPlan) {
	panic("compress: no assembly in this build")
}
