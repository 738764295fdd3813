//go:build !linux || !amd64 || noasm

package cpuid

// requestAMX: tiles are used only where Linux grants them, by a build
// with assembly.
func requestAMX() bool { return false }
