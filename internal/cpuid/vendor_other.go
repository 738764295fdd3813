//go:build !amd64

package cpuid

func vendor() string { return "" }

func family() int { return 0 }
