//go:build !amd64

package cpuid

func vendor() string { return "" }

func family() int { return 0 }

func lastLevelCache() int64 { return 0 }
