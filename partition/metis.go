//go:build metis

package partition

/*
#cgo LDFLAGS: -lmetis
#include <metis.h>
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/graft-gnn/graft/graph"
)

// METIS calls METIS_PartGraphKway from the system's METIS 5 library
// (Debian: libmetis-dev), with default options apart from the seed and the
// imbalance tolerance. It exists in builds with the metis tag.
type METIS struct{}

func init() { register("metis", func() Partitioner { return METIS{} }) }

// Partition implements Partitioner. g must be undirected; self loops are
// left out of what METIS sees, as it rejects them.
func (METIS) Partition(g *graph.Graph, k int, opts Options) ([]int32, error) {
	if unsafe.Sizeof(C.idx_t(0)) != 4 {
		return nil, fmt.Errorf("partition: METIS built with %d-byte idx_t; the binding needs 4", unsafe.Sizeof(C.idx_t(0)))
	}
	if err := checkInput(g, k, opts); err != nil {
		return nil, err
	}
	if err := checkSymmetricParallel(g); err != nil {
		return nil, err
	}
	parts := make([]int32, g.N)
	if k == 1 {
		return parts, nil // METIS 5.1 mishandles nparts = 1
	}
	if g.NumEdges() > math.MaxInt32 {
		return nil, fmt.Errorf("partition: %d edge entries exceed METIS's 32-bit index range", g.NumEdges())
	}
	xadj := make([]int32, g.N+1)
	adj := make([]int32, 0, g.NumEdges())
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			if int(u) != v {
				adj = append(adj, u)
			}
		}
		xadj[v+1] = int32(len(adj))
	}
	if len(adj) == 0 {
		adj = append(adj, 0) // METIS wants a valid pointer even with no edges
	}
	cons := newConstraints(g.N, k, opts)
	vwgt := make([]int32, g.N*cons.ncon)
	for v := 0; v < g.N; v++ {
		for c := 0; c < cons.ncon; c++ {
			vwgt[v*cons.ncon+c] = int32(cons.weight(c, v))
		}
	}
	var options [C.METIS_NOPTIONS]C.idx_t
	C.METIS_SetDefaultOptions(&options[0])
	options[C.METIS_OPTION_SEED] = C.idx_t(int32(opts.Seed))
	options[C.METIS_OPTION_UFACTOR] = C.idx_t(math.Round(opts.imbalance() * 1000))
	nvtxs, ncon, nparts := C.idx_t(g.N), C.idx_t(cons.ncon), C.idx_t(k)
	var objval C.idx_t
	idx := func(s []int32) *C.idx_t { return (*C.idx_t)(unsafe.Pointer(&s[0])) }
	status := C.METIS_PartGraphKway(&nvtxs, &ncon, idx(xadj), idx(adj), idx(vwgt), nil, nil, &nparts,
		nil, nil, &options[0], &objval, idx(parts))
	switch status {
	case C.METIS_OK:
		return parts, nil
	case C.METIS_ERROR_INPUT:
		return nil, fmt.Errorf("partition: METIS rejected the input")
	case C.METIS_ERROR_MEMORY:
		return nil, fmt.Errorf("partition: METIS ran out of memory")
	default:
		return nil, fmt.Errorf("partition: METIS failed (status %d)", int(status))
	}
}
