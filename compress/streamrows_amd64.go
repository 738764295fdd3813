//go:build !noasm

package compress

import (
	"github.com/graft-gnn/graft/internal/cpuid"
	"golang.org/x/sys/cpu"
)

// deltaRowsAsm selects the AVX-512 kernels of gatherDeltaRows and
// scatterDeltaRows (streamrows_amd64.s), which need VBMI's byte permutes.
var deltaRowsAsm = cpuid.Detected >= cpuid.AVX512 && cpu.X86.HasAVX512VBMI

// gatherDeltaRowsAVX512 is gatherDeltaRowsGo of the first 16·groups rows
// of k ≥ 16·groups, of w bytes of codes, p being w's plan.
//
//go:noescape
func gatherDeltaRowsAVX512(out, rows *byte, groups, k, w int, p *deltaRowsPlan)

// scatterDeltaRowsAVX512 is scatterDeltaRowsGo of the first 16·groups
// rows of k ≥ 16·groups, none left out.
//
//go:noescape
func scatterDeltaRowsAVX512(rows, s *byte, groups, k, w int, p *deltaRowsPlan)
