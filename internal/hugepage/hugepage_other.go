//go:build !linux

package hugepage

func enabled() bool { return false }

func advise([]byte) {}

func collapse([]byte) {}
