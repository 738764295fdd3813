//go:build !noasm

package spmm

import "github.com/graft-gnn/graft/internal/cpuid"

// kernelsFor returns the widest kernels level allows.
func kernelsFor(cpuid.Level) kernelSet { return generic }
