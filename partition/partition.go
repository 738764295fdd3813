package partition

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/graft-gnn/graft/graph"
)

// A Partitioner assigns every node of g to one of k parts: parts[v] in
// [0, k). Implementations never return an empty part when k <= g.N.
type Partitioner interface {
	Partition(g *graph.Graph, k int, opts Options) (parts []int32, err error)
}

// DefaultImbalance is the tolerated excess of the heaviest part over the mean
// (3%, METIS's default for k-way partitioning).
const DefaultImbalance = 0.03

// Options are the inputs a partitioner takes besides the graph.
type Options struct {
	// Seed makes runs reproducible: the same seed gives the same assignment.
	Seed uint64
	// NodeWeights weighs each node for the balance constraint; nil weighs
	// every node 1. Weights must be non-negative.
	NodeWeights []int32
	// Balance, if non-nil, is a second constraint that every part must also
	// balance, for example 1 for training nodes and 0 for the rest.
	Balance []int32
	// Imbalance is the tolerated max/mean - 1 for each constraint; 0 means
	// DefaultImbalance.
	Imbalance float64
}

func (o Options) imbalance() float64 {
	if o.Imbalance <= 0 {
		return DefaultImbalance
	}
	return o.Imbalance
}

// ErrNoMETIS is returned by New("metis") in builds without the metis tag.
var ErrNoMETIS = errors.New("partition: method metis needs a build with -tags metis (and Debian's libmetis-dev)")

var (
	registryMu sync.Mutex
	registry   = map[string]func() Partitioner{
		"random":     func() Partitioner { return Random{} },
		"stream":     func() Partitioner { return Stream{} },
		"multilevel": func() Partitioner { return Multilevel{} },
	}
)

// register adds a named method; the metis binding registers itself when built.
func register(name string, f func() Partitioner) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = f
}

// Methods lists the method names New accepts in this build.
func Methods() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New returns the partitioner called name: random, stream, multilevel or
// (with the metis build tag) metis.
func New(name string) (Partitioner, error) {
	registryMu.Lock()
	f, ok := registry[name]
	registryMu.Unlock()
	if ok {
		return f(), nil
	}
	if name == "metis" {
		return nil, ErrNoMETIS
	}
	return nil, fmt.Errorf("partition: unknown method %q (have %v)", name, Methods())
}

// checkInput validates what every partitioner needs: a well-formed graph, a
// feasible part count and weights of the right length.
func checkInput(g *graph.Graph, k int, opts Options) error {
	if g == nil {
		return errors.New("partition: nil graph")
	}
	if err := checkCSR(g); err != nil {
		return err
	}
	if k <= 0 {
		return fmt.Errorf("partition: part count k = %d, want at least 1", k)
	}
	if k > g.N {
		return fmt.Errorf("partition: %d parts for %d nodes: k may not exceed the node count", k, g.N)
	}
	if k > 1<<30 {
		return fmt.Errorf("partition: part count %d is too large", k)
	}
	for _, w := range []struct {
		name string
		w    []int32
	}{{"node weights", opts.NodeWeights}, {"balance weights", opts.Balance}} {
		if w.w == nil {
			continue
		}
		if len(w.w) != g.N {
			return fmt.Errorf("partition: %d %s for %d nodes", len(w.w), w.name, g.N)
		}
		for v, x := range w.w {
			if x < 0 {
				return fmt.Errorf("partition: %s[%d] = %d is negative", w.name, v, x)
			}
		}
	}
	if opts.Imbalance < 0 {
		return fmt.Errorf("partition: negative imbalance %g", opts.Imbalance)
	}
	return nil
}

// checkCSR validates the graph's structure so that no partitioner can index
// out of range on malformed input.
func checkCSR(g *graph.Graph) error {
	if g.N < 0 || g.N > 1<<31-1 {
		return fmt.Errorf("partition: node count %d out of range", g.N)
	}
	if len(g.Offsets) != g.N+1 {
		return fmt.Errorf("partition: graph has %d offsets for %d nodes, want %d", len(g.Offsets), g.N, g.N+1)
	}
	if g.Offsets[0] != 0 {
		return fmt.Errorf("partition: graph offsets[0] = %d, want 0", g.Offsets[0])
	}
	for v := 0; v < g.N; v++ {
		if g.Offsets[v+1] < g.Offsets[v] {
			return fmt.Errorf("partition: graph offsets decrease at node %d", v)
		}
	}
	if int64(len(g.Neighbors)) != g.Offsets[g.N] {
		return fmt.Errorf("partition: graph has %d neighbour ids for %d edges", len(g.Neighbors), g.Offsets[g.N])
	}
	n := int32(g.N)
	for i, u := range g.Neighbors {
		if u < 0 || u >= n {
			return fmt.Errorf("partition: neighbour id %d at position %d out of range [0,%d)", u, i, g.N)
		}
	}
	return nil
}

// CheckSymmetric reports an error naming one edge whose reverse is missing.
// The multilevel and METIS partitioners require an undirected graph.
func CheckSymmetric(g *graph.Graph) error {
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			if !hasEdge(g, int(u), int32(v)) {
				return fmt.Errorf("partition: graph is not symmetric: edge %d→%d has no reverse (symmetrise it first)", v, u)
			}
		}
	}
	return nil
}

// hasEdge looks for u in v's row, by binary search when the row is sorted.
func hasEdge(g *graph.Graph, v int, u int32) bool {
	row := g.Adj(v)
	i := sort.Search(len(row), func(i int) bool { return row[i] >= u })
	if i < len(row) && row[i] == u {
		return true
	}
	for _, x := range row { // rows should be sorted; stay correct if not
		if x == u {
			return true
		}
	}
	return false
}

// CheckAssignment verifies that parts assigns each of n nodes a part in
// [0, k).
func CheckAssignment(parts []int32, n, k int) error {
	if len(parts) != n {
		return fmt.Errorf("partition: assignment has %d entries for %d nodes", len(parts), n)
	}
	if k <= 0 {
		return fmt.Errorf("partition: part count k = %d, want at least 1", k)
	}
	for v, p := range parts {
		if p < 0 || int(p) >= k {
			return fmt.Errorf("partition: node %d has part %d, out of range [0,%d)", v, p, k)
		}
	}
	return nil
}

// NumParts is one more than the largest part id (0 for an empty assignment).
func NumParts(parts []int32) int {
	k := int32(-1)
	for _, p := range parts {
		k = max(k, p)
	}
	return int(k) + 1
}

// searchBounds finds the chunk that starts at lo, for tasks run by
// parallel.ForBounds that keep per-chunk results.
func searchBounds(bounds []int, lo int) int { return sort.SearchInts(bounds, lo) }
