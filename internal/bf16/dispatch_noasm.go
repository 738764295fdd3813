//go:build noasm || !amd64

package bf16

import "github.com/graft-gnn/graft/internal/cpuid"

// kernelsFor returns the pure-Go kernels: this build has no assembly.
func kernelsFor(cpuid.Level) kernels { return generic }
