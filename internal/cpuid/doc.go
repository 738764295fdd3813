// Package cpuid reports which SIMD instruction sets the kernels may use, read
// once from the CPU and overridable for tests and the noasm build.
package cpuid
