//go:build !noasm && amd64

package cpuid

// InEffect is the level the kernels of this build run at.
func InEffect() Level { return Detected }
