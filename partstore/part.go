package partstore

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
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
	case x.Dense != nil:
		m := tensor.New(len(owned), x.Dense.Cols)
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

// Bounds a stored part must respect.
const (
	maxParts   = 1 << 16
	maxColumns = 1 << 24
)

// Decode rebuilds a stored part from the bytes of its three files,
// checking every length and index, so that what it returns is safe to train
// on; it never panics.
func Decode(files ...[]byte) (*Part, error) {
	if len(files) != len(fileNames) {
		return nil, fmt.Errorf("want %d files, got %d", len(fileNames), len(files))
	}
	var maps [3]map[string]array
	for i, b := range files {
		m, err := decodeArrays(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileNames[i], err)
		}
		maps[i] = m
	}
	var err error
	get := func(file int, name string, typ int) array {
		a, ok := maps[file][name]
		switch {
		case !ok:
			err = errors.Join(err, fmt.Errorf("%s: no array %q", fileNames[file], name))
		case typ == typeInt32 && a.i32 == nil, typ == typeInt64 && a.i64 == nil, typ == typeFloat32 && a.f32 == nil:
			err = errors.Join(err, fmt.Errorf("%s: array %q has the wrong type", fileNames[file], name))
		}
		return a
	}
	meta := get(0, "meta", typeInt64).i64
	owned := get(0, "owned", typeInt32).i32
	halo := get(0, "halo", typeInt32).i32
	haloStart := get(0, "halo_start", typeInt64).i64
	offsets := get(0, "local_offsets", typeInt64).i64
	indices := get(0, "local_indices", typeInt32).i32
	sendOff := get(0, "send_offsets", typeInt64).i64
	send := get(0, "send", typeInt32).i32
	colDeg := get(0, "col_degree", typeInt32).i32
	shape := get(1, "shape", typeInt64).i64
	labels := get(2, "labels", typeInt32).i32
	train, val, test := get(2, "train", typeInt32).i32, get(2, "val", typeInt32).i32, get(2, "test", typeInt32).i32
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) (*Part, error) {
		return nil, fmt.Errorf("topology.bin: "+format, args...)
	}
	if len(meta) != 5 {
		return bad("meta has %d values, want 5", len(meta))
	}
	id, k, nodes, classes := meta[0], meta[1], meta[2], meta[4]
	switch {
	case k < 1 || k > maxParts || id < 0 || id >= k:
		return bad("part %d of %d", id, k)
	case nodes < 1 || nodes > math.MaxInt32:
		return bad("%d nodes", nodes)
	case classes < 1 || classes > math.MaxInt32:
		return bad("%d classes", classes)
	}
	if err := ascendingIDs(owned, nodes); err != nil {
		return bad("owned: %v", err)
	}
	for _, v := range halo {
		if v < 0 || int64(v) >= nodes {
			return bad("halo node %d outside [0,%d)", v, nodes)
		}
	}
	if err := checkOffsets(haloStart, int(k)+1, int64(len(halo))); err != nil {
		return bad("halo_start: %v", err)
	}
	if haloStart[id] != haloStart[id+1] {
		return bad("the part's own halo block is not empty")
	}
	own := len(owned)
	cols := own + len(halo)
	if err := checkOffsets(offsets, own+1, int64(len(indices))); err != nil {
		return bad("local_offsets: %v", err)
	}
	for _, c := range indices {
		if c < 0 || int(c) >= cols {
			return bad("local column %d outside [0,%d)", c, cols)
		}
	}
	if err := checkOffsets(sendOff, int(k)+1, int64(len(send))); err != nil {
		return bad("send_offsets: %v", err)
	}
	if sendOff[id] != sendOff[id+1] {
		return bad("the part sends to itself")
	}
	for _, r := range send {
		if r < 0 || int(r) >= own {
			return bad("send row %d outside [0,%d)", r, own)
		}
	}
	if len(colDeg) != cols {
		return bad("%d column degrees for %d columns", len(colDeg), cols)
	}
	for _, d := range colDeg {
		if d < 1 {
			return bad("column degree %d", d)
		}
	}
	sp := &Part{Nodes: int(nodes), Classes: int(classes), ColDegree: colDeg, Layout: uint64(meta[3])}
	p := &sp.Part
	p.ID, p.Owned, p.Halo = int(id), owned, halo
	p.HaloStart = make([]int, k+1)
	for i, v := range haloStart {
		p.HaloStart[i] = int(v)
	}
	p.Local = &tensor.CSR{Rows: own, Cols: cols, Offsets: offsets, Indices: indices}
	p.Send = make([][]int32, k)
	for q := range int(k) {
		if q != int(id) {
			p.Send[q] = send[sendOff[q]:sendOff[q+1]:sendOff[q+1]]
		}
	}

	// Features: the owned rows, dense or sparse.
	if len(shape) != 4 {
		return nil, fmt.Errorf("features.bin: shape has %d values, want 4", len(shape))
	}
	rows, fcols := shape[0], shape[1]
	if rows != int64(own) || fcols < 1 || fcols > maxColumns {
		return nil, fmt.Errorf("features.bin: %d×%d features for %d owned nodes", rows, fcols, own)
	}
	switch shape[2] {
	case 0:
		values := get(1, "values", typeFloat32).f32
		if err != nil {
			return nil, err
		}
		if int64(len(values)) != rows*fcols {
			return nil, fmt.Errorf("features.bin: %d values for %d×%d", len(values), rows, fcols)
		}
		sp.Features = nn.Features{Dense: &tensor.Matrix{Rows: int(rows), Cols: int(fcols), Data: values}}
	case 1:
		fo, fi := get(1, "offsets", typeInt64).i64, get(1, "indices", typeInt32).i32
		var fv []float32
		if shape[3] == 1 {
			fv = get(1, "values", typeFloat32).f32
		}
		if err != nil {
			return nil, err
		}
		if err := checkOffsets(fo, int(rows)+1, int64(len(fi))); err != nil {
			return nil, fmt.Errorf("features.bin: offsets: %v", err)
		}
		if fv != nil && len(fv) != len(fi) {
			return nil, fmt.Errorf("features.bin: %d values for %d entries", len(fv), len(fi))
		}
		for _, c := range fi {
			if c < 0 || int64(c) >= fcols {
				return nil, fmt.Errorf("features.bin: column %d outside [0,%d)", c, fcols)
			}
		}
		sp.Features = nn.Features{Sparse: &tensor.CSR{Rows: int(rows), Cols: int(fcols), Offsets: fo, Indices: fi, Values: fv}}
	default:
		return nil, fmt.Errorf("features.bin: storage %d, want 0 (dense) or 1 (sparse)", shape[2])
	}

	// Labels and the split.
	if len(labels) != own {
		return nil, fmt.Errorf("labels.bin: %d labels for %d owned nodes", len(labels), own)
	}
	for _, l := range labels {
		if l < -1 || int64(l) >= classes {
			return nil, fmt.Errorf("labels.bin: label %d outside [-1,%d)", l, classes)
		}
	}
	for _, rows := range [][]int32{train, val, test} {
		for _, r := range rows {
			if r < 0 || int(r) >= own || labels[r] < 0 {
				return nil, fmt.Errorf("labels.bin: split row %d is not a labelled owned node", r)
			}
		}
	}
	sp.Labels, sp.Train, sp.Val, sp.Test = labels, train, val, test
	return sp, nil
}
