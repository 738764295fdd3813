//go:build noasm || !amd64

package vec

import "github.com/graft-gnn/graft/internal/cpuid"

// kernelsFor returns the pure-Go kernels: this build has no assembly.
func kernelsFor(cpuid.Level) kernels { return generic }
