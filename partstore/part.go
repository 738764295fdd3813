package partstore

import (
	"slices"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// Part is one worker's share of a partitioned problem.
type Part struct {
	Part    partition.Part // ID, Owned, Halo, HaloStart, Local, Send
	Nodes   int            // nodes of the global graph
	Classes int
	// ColDegree is, per local column, the node's degree in the global
	// graph with a self loop (A+I), which the GCN operator normalises by.
	ColDegree []int32
	Features  nn.Features
	Labels    []int32 // owned rows
	// Train, Val and Test are local rows of owned nodes.
	Train, Val, Test []int32
	Layout           uint64 // Fingerprint of the assignment
}

// Source is the global problem parts are cut from: the graph, the node
// features and labels, and the split in global node ids.
type Source struct {
	Graph    *graph.Graph
	Features nn.Features
	Labels   []int32
	Classes  int
	Split    dataset.Split
}

// Build returns what the worker holding part needs of src; fingerprint
// identifies the layout part belongs to.
func Build(src Source, part *partition.Part, fingerprint uint64) *Part {
	sp := &Part{Part: *part, Nodes: src.Graph.N, Classes: src.Classes, Layout: fingerprint,
		ColDegree: part.ColumnDegrees(src.Graph), Labels: make([]int32, len(part.Owned))}
	for i, v := range part.Owned {
		sp.Labels[i] = src.Labels[v]
	}
	sp.Features = OwnedFeatures(src.Features, part.Owned)
	sp.Train, sp.Val, sp.Test = LocalRows(src.Split.Train, part.Owned), LocalRows(src.Split.Val, part.Owned), LocalRows(src.Split.Test, part.Owned)
	return sp
}

// OwnedFeatures returns the rows of x listed in owned, in order.
func OwnedFeatures(x nn.Features, owned []int32) nn.Features {
	switch {
	case x.Sparse != nil:
		return nn.Features{Sparse: x.Sparse.SelectRows(owned)}
	case x.BF16 != nil:
		return nn.BF16Features(x.BF16.SelectRows(owned))
	case x.Dense != nil:
		// On huge pages: a layer's aggregation reads the rows at random.
		m := &tensor.Matrix{Rows: len(owned), Cols: x.Dense.Cols, Data: hugepage.Float32s(len(owned) * x.Dense.Cols)}
		for i, v := range owned {
			copy(m.Row(i), x.Dense.Row(int(v)))
		}
		return nn.Features{Dense: m}
	}
	return nn.Features{}
}

// LocalRows maps the global ids of nodes a part owns (owned, ascending) to
// local rows, keeping their order; other nodes are skipped.
func LocalRows(global, owned []int32) []int32 {
	var out []int32
	for _, v := range global {
		if i, ok := slices.BinarySearch(owned, v); ok {
			out = append(out, int32(i))
		}
	}
	return out
}

// arrays lays sp out as the three files' arrays.
func (sp *Part) arrays() [3][]array {
	p := &sp.Part
	k := len(p.HaloStart) - 1
	haloStart := make([]int64, len(p.HaloStart))
	for i, v := range p.HaloStart {
		haloStart[i] = int64(v)
	}
	sendOff := make([]int64, k+1)
	var send []int32
	for q := range k {
		if q < len(p.Send) {
			send = append(send, p.Send[q]...)
		}
		sendOff[q+1] = int64(len(send))
	}
	i32 := func(x []int32) []int32 {
		if x == nil {
			return []int32{}
		}
		return x
	}
	topo := []array{
		{name: "meta", i64: []int64{int64(p.ID), int64(k), int64(sp.Nodes), int64(sp.Layout), int64(sp.Classes)}},
		{name: "owned", i32: i32(p.Owned)},
		{name: "halo", i32: i32(p.Halo)},
		{name: "halo_start", i64: haloStart},
		{name: "local_offsets", i64: p.Local.Offsets},
		{name: "local_indices", i32: i32(p.Local.Indices)},
		{name: "send_offsets", i64: sendOff},
		{name: "send", i32: i32(send)},
		{name: "col_degree", i32: i32(sp.ColDegree)},
	}
	var feats []array
	switch x := sp.Features; {
	case x.Sparse != nil:
		hasValues := int64(0)
		if x.Sparse.Values != nil {
			hasValues = 1
		}
		feats = []array{
			{name: "shape", i64: []int64{int64(x.Sparse.Rows), int64(x.Sparse.Cols), 1, hasValues}},
			{name: "offsets", i64: x.Sparse.Offsets},
			{name: "indices", i32: i32(x.Sparse.Indices)},
		}
		if hasValues == 1 {
			feats = append(feats, array{name: "values", f32: x.Sparse.Values})
		}
	case x.Dense != nil:
		data := x.Dense.Data
		if data == nil {
			data = []float32{}
		}
		feats = []array{
			{name: "shape", i64: []int64{int64(x.Dense.Rows), int64(x.Dense.Cols), 0, 1}},
			{name: "values", f32: data},
		}
	}
	labels := []array{
		{name: "labels", i32: i32(sp.Labels)},
		{name: "train", i32: i32(sp.Train)},
		{name: "val", i32: i32(sp.Val)},
		{name: "test", i32: i32(sp.Test)},
	}
	return [3][]array{topo, feats, labels}
}
