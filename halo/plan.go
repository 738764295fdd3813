package halo

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/partition"
)

// plan is what a worker's part says about its messages: which owned rows
// each peer reads, where each peer's rows land among the halo rows, and,
// for the shared-rows path, the owned rows any peer reads and where each
// peer's rows are among them.
type plan struct {
	me, peers int
	own       int       // owned rows
	send      [][]int32 // send[q]: the owned rows peer q reads, in its order
	haloStart []int     // peer q's rows are halo rows [haloStart[q], haloStart[q+1])

	boundary []int32   // the owned rows some peer reads, ascending
	sendAt   [][]int32 // send[q][i] is boundary[sendAt[q][i]]

	sites []siteNames
}

// siteNames are the communicator sites of one layer's exchanges, under
// which their traffic is counted.
type siteNames struct{ fwd, bwd, eval string }

// Site name prefixes of the training exchanges' traffic, and of the
// evaluation passes'.
const (
	ForwardSites  = "halo.fwd."
	BackwardSites = "halo.bwd."
	EvalSites     = "halo.eval."
)

func newPlan(part *partition.Part, layers int) *plan {
	p := &plan{me: part.ID, peers: len(part.Send), own: len(part.Owned), send: part.Send, haloStart: part.HaloStart}
	for l := range layers {
		p.sites = append(p.sites, siteNames{
			fwd: fmt.Sprintf("%s%d", ForwardSites, l), bwd: fmt.Sprintf("%s%d", BackwardSites, l), eval: fmt.Sprintf("%s%d", EvalSites, l)})
	}
	return p
}

// haloRows returns the extended rows where peer q's rows land.
func (p *plan) haloRows(q int) (lo, hi int) {
	return p.own + p.haloStart[q], p.own + p.haloStart[q+1]
}

// shareRows computes boundary and sendAt, which only the shared-rows path
// needs.
func (p *plan) shareRows() {
	at := map[int32]int32{}
	for q, rows := range p.send {
		if q == p.me {
			continue
		}
		for _, r := range rows {
			at[r] = 0
		}
	}
	for r := range at {
		p.boundary = append(p.boundary, r)
	}
	slices.Sort(p.boundary)
	for i, r := range p.boundary {
		at[r] = int32(i)
	}
	p.sendAt = make([][]int32, p.peers)
	for q, rows := range p.send {
		if q == p.me {
			continue
		}
		p.sendAt[q] = make([]int32, len(rows))
		for i, r := range rows {
			p.sendAt[q][i] = at[r]
		}
	}
}
