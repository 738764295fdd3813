//go:build !noasm

package vec

import "github.com/graft-gnn/graft/internal/cpuid"

// kernelsFor returns the widest kernels level allows.
func kernelsFor(cpuid.Level) kernels { return generic }
