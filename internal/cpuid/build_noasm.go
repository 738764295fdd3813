//go:build noasm || !amd64

package cpuid

// InEffect is the level the kernels of this build run at: the pure-Go
// twins under the noasm tag or off amd64.
func InEffect() Level { return Generic }
