//go:build noasm || !amd64

package compress

// This build has no assembly: huffTable.encode runs its Go loop.
var huffAsm = false

func huffEncodeAVX512(*byte, *byte, int, *huffTable) int {
	panic("compress: no assembly in this build")
}
