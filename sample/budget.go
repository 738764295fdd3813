package sample

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// maxDraws bounds one count of a sampler's form (a layer's draws,
// GraphSAINT's NODES, EDGES, ROOTS or LENGTH).
const maxDraws = 1 << 30

// Draw buffers alive at once: GraphSAINT pre-samples presampleGroup
// subgraphs at a time, each drawn whole before it is counted; a layer-wise
// sampler holds a layer's draws in each batch sampled ahead or in use.
const (
	saintBuffers     = presampleGroup
	layerwiseBuffers = 8
)

// availableMemory bounds the draw buffers (a variable for tests).
var availableMemory = sysstat.AvailableMemory

// roomForDraws refuses a sampler whose draws would not fit in the memory
// available: draws per subgraph or batch (of, plural ofs) of bytes each, in buffers
// alive at once. The draws are with replacement, so a form may ask for more
// than the graph has nodes or edges, and each draw takes room before the
// repeats are merged: on a small graph saint-node:1000000000 crashed the
// runtime out of memory rather than saying why.
func roomForDraws(draws, bytes, buffers int64, of, ofs string) error {
	need := draws * bytes * buffers
	if need < 64<<20 {
		return nil
	}
	if avail, ok := availableMemory(); ok && need > avail {
		return fmt.Errorf("%d draws a %s take %s (%d bytes a draw, %d %s at once), more than the %s of memory available; draw fewer",
			draws, of, byteSize(need), bytes, buffers, ofs, byteSize(avail))
	}
	return nil
}

// byteSize formats n bytes for a message.
func byteSize(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
