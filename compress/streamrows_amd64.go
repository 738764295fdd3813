//go:build !noasm

package compress

import (
	"github.com/graft-gnn/graft/internal/cpuid"
	"golang.org/x/sys/cpu"
)

// shortRowsAsm selects the AVX-512 kernels of gatherShortRows and
// scatterShortRows (streamrows_amd64.s), which need VBMI's byte permutes.
var shortRowsAsm = cpuid.Detected >= cpuid.AVX512 && cpu.X86.HasAVX512VBMI

// gatherShortRowsAVX512 is gatherShortRowsGo of the first 16·groups rows
// of k ≥ 16·groups, of w bytes of codes, p being w's plan.
//
//go:noescape
func gatherShortRowsAVX512(out, rows *byte, groups, k, w int, p *shortRowsPlan)

// scatterShortRowsAVX512 is scatterShortRowsGo of the first 16·groups
// rows of k ≥ 16·groups, none left out.
//
//go:noescape
func scatterShortRowsAVX512(rows, s *byte, groups, k, w int, p *shortRowsPlan)
