//go:build !(linux && amd64)

package cpuid

// requestAMX: tiles are used only where Linux grants them.
func requestAMX() bool { return false }
