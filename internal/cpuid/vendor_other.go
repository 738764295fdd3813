//go:build !amd64

package cpuid

func vendor() string { return "" }
