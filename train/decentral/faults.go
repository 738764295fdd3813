package decentral

import (
	"fmt"
	"slices"

	"github.com/graft-gnn/graft/graph"
)

// Faults describes what goes wrong on the network. Every decision is a pure
// function of the seed, the round and the link, so a faulty run is as
// reproducible as a clean one whatever the goroutine schedule.
type Faults struct {
	Drop    float64 // probability that any one message is lost
	Seed    uint64
	Cuts    []LinkCut
	Outages []Outage
}

// LinkCut silences the link between A and B, both ways, for Rounds rounds
// starting at round From.
type LinkCut struct{ A, B, From, Rounds int }

// Outage takes Node off the network for Rounds rounds starting at From: it
// sends and receives nothing and does not update its parameters; then it
// rejoins with the parameters it had and consensus pulls it back.
type Outage struct{ Node, From, Rounds int }

// check rejects faults that name nodes or links the network does not have:
// they would silently do nothing.
func (f *Faults) check(g *graph.Graph) error {
	if f == nil {
		return nil
	}
	for _, c := range f.Cuts {
		if c.A < 0 || c.B < 0 || c.A >= g.N || c.B >= g.N {
			return fmt.Errorf("decentral: link cut %d-%d names a node outside [0, %d)", c.A, c.B, g.N)
		}
		if _, ok := slices.BinarySearch(g.Adj(c.A), int32(c.B)); !ok {
			return fmt.Errorf("decentral: nodes %d and %d are not neighbours; a cut needs a link", c.A, c.B)
		}
	}
	for _, o := range f.Outages {
		if o.Node < 0 || o.Node >= g.N {
			return fmt.Errorf("decentral: outage of node %d outside [0, %d)", o.Node, g.N)
		}
	}
	return nil
}

func within(round, from, rounds int) bool { return round >= from && round < from+rounds }

// lost reports whether the message from → to in round is lost.
func (f *Faults) lost(round, from, to int) bool {
	if f == nil {
		return false
	}
	if f.away(from, round) || f.away(to, round) {
		return true
	}
	for _, c := range f.Cuts {
		if ((c.A == from && c.B == to) || (c.A == to && c.B == from)) && within(round, c.From, c.Rounds) {
			return true
		}
	}
	if f.Drop <= 0 {
		return false
	}
	h := mix64(f.Seed ^ mix64(uint64(round)<<1|1) ^ mix64(uint64(from)<<32|uint64(to)))
	return float64(h>>11)/(1<<53) < f.Drop
}

// away reports whether node is off the network in round.
func (f *Faults) away(node, round int) bool {
	if f == nil {
		return false
	}
	for _, o := range f.Outages {
		if o.Node == node && within(round, o.From, o.Rounds) {
			return true
		}
	}
	return false
}

// mix64 is SplitMix64's finaliser, a cheap well-spread hash.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
