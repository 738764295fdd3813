package dataset

import (
	"fmt"
	"github.com/graft-gnn/graft/tensor"
	"slices"
)

// Components labels the connected components of d's graph, which the
// dataset convention stores in both directions. It returns each node's
// component id and the size of each component; ids are numbered by first
// node, so component 0 contains node 0.
func (d *Dataset) Components() (comp []int32, sizes []int) {
	g := d.Graph
	comp = make([]int32, g.N)
	for i := range comp {
		comp[i] = -1
	}
	var queue []int32
	for s := 0; s < g.N; s++ {
		if comp[s] >= 0 {
			continue
		}
		id := int32(len(sizes))
		comp[s] = id
		queue = append(queue[:0], int32(s))
		for head := 0; head < len(queue); head++ {
			for _, u := range g.Adj(int(queue[head])) {
				if comp[u] < 0 {
					comp[u] = id
					queue = append(queue, u)
				}
			}
		}
		sizes = append(sizes, len(queue))
	}
	return comp, sizes
}

// LargestComponent returns the dataset restricted to the largest connected
// component of its graph (ties go to the component holding the lowest node
// id), as Shchur et al. (2018) standardise the graphs they evaluate on. The
// kept nodes stay in their original order, renumbered 0..n-1; features and
// labels follow them, and NodeIDs names each by its id in the source. Classes with labelled nodes only outside the component
// are dropped and the remaining classes renumbered in order, so every class
// of the result has a node. Fixed splits are restricted to the component
// and keep their names; MaskOrder is dropped, since external mask files
// describe the original nodes (a "file:" split then fails with a length
// mismatch instead of indexing the wrong nodes).
//
// A graph that is already connected comes back as d itself.
func (d *Dataset) LargestComponent() (*Dataset, error) {
	if d.Graph == nil || d.Graph.N == 0 {
		return nil, fmt.Errorf("dataset %s: no nodes, so no largest component", d.Name)
	}
	comp, sizes := d.Components()
	if len(sizes) == 1 {
		return d, nil
	}
	best := int32(0)
	for c, s := range sizes {
		if s > sizes[best] {
			best = int32(c)
		}
	}
	nodes := make([]int32, 0, sizes[best])
	for v, c := range comp {
		if c == best {
			nodes = append(nodes, int32(v))
		}
	}
	sub, _, oldToNew, err := d.Graph.InducedSubgraph(nodes)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: largest component: %w", d.Name, err)
	}
	out := &Dataset{Name: d.Name, Graph: sub, NumClasses: d.NumClasses, ClassNames: d.ClassNames}
	if d.Dense != nil {
		out.Dense = d.Dense.SelectRows(nodes)
	}
	if d.Sparse != nil {
		out.Sparse = d.Sparse.SelectRows(nodes)
	}
	if x := d.DenseBF16; x != nil { // copied: the component is not the file
		out.DenseBF16 = &tensor.MatrixBF16{Rows: len(nodes), Cols: x.Cols, Data: make([]uint16, len(nodes)*x.Cols)}
		for i, v := range nodes {
			copy(out.DenseBF16.Data[i*x.Cols:(i+1)*x.Cols], x.Data[int(v)*x.Cols:(int(v)+1)*x.Cols])
		}
	}
	if d.Labels != nil {
		out.Labels, out.NumClasses, out.ClassNames = keptLabels(d, nodes)
	}
	out.NodeIDs = make([]string, len(nodes)) // the kept nodes' source ids
	for i, v := range nodes {
		out.NodeIDs[i] = d.NodeID(int(v))
	}
	for _, s := range d.Splits {
		out.Splits = append(out.Splits, Split{Name: s.Name,
			Train: remap(s.Train, oldToNew), Val: remap(s.Val, oldToNew), Test: remap(s.Test, oldToNew)})
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("largest component: %w", err)
	}
	return out, nil
}

// keptLabels returns the labels of nodes, renumbering classes so that those
// left without a node in nodes disappear.
func keptLabels(d *Dataset, nodes []int32) ([]int32, int, []string) {
	present := make([]bool, d.NumClasses)
	for _, v := range nodes {
		if y := d.Labels[v]; y >= 0 {
			present[y] = true
		}
	}
	hadNodes := make([]bool, d.NumClasses)
	for _, y := range d.Labels {
		if y >= 0 {
			hadNodes[y] = true
		}
	}
	newID := make([]int32, d.NumClasses)
	var names []string
	for c := range newID {
		if present[c] || !hadNodes[c] {
			newID[c] = int32(len(names))
			names = append(names, d.ClassNames[c])
		} else {
			newID[c] = Unlabelled
		}
	}
	labels := make([]int32, len(nodes))
	for i, v := range nodes {
		labels[i] = Unlabelled
		if y := d.Labels[v]; y >= 0 {
			labels[i] = newID[y]
		}
	}
	if len(names) == d.NumClasses {
		names = d.ClassNames
	}
	return labels, len(names), names
}

// remap renames the nodes of a sorted list through oldToNew, dropping those
// outside the subgraph; the result stays sorted because the kept nodes keep
// their order.
func remap(list, oldToNew []int32) []int32 {
	out := make([]int32, 0, len(list))
	for _, v := range list {
		if w := oldToNew[v]; w >= 0 {
			out = append(out, w)
		}
	}
	return slices.Clip(out)
}
