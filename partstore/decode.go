package partstore

import (
	"errors"
	"fmt"
	"math"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// Bounds a stored part must respect. maxClasses is the datasets' own
// bound (class ids are at most 2^15-1): the model's last layer is as wide
// as the class count, which the part's arrays do not otherwise back.
const (
	maxParts   = 1 << 16
	maxColumns = 1 << 24
	maxClasses = 1 << 15
)

// The files of a part, as indices into fileNames.
const (
	topologyFile = iota
	featuresFile
	labelsFile
)

// Decode rebuilds a stored part from the bytes of its three files,
// checking every length and index, so that what it returns is safe to train
// on; it never panics.
func Decode(files ...[]byte) (*Part, error) {
	s, err := decodeFiles(files)
	if err != nil {
		return nil, err
	}
	// Every array but the features' own is looked up before any is
	// checked, so that one error names all that are missing.
	topo := s.topology()
	shape := s.get(featuresFile, "shape", typeInt64).i64
	labels := s.labels()
	if s.err != nil {
		return nil, s.err
	}
	if err := topo.check(); err != nil {
		return nil, err
	}
	sp := topo.part()
	if sp.Features, err = s.features(shape, len(sp.Part.Owned)); err != nil {
		return nil, err
	}
	if err := labels.check(len(sp.Part.Owned), int64(sp.Classes)); err != nil {
		return nil, err
	}
	sp.Labels, sp.Train, sp.Val, sp.Test = labels.labels, labels.train, labels.val, labels.test
	return sp, nil
}

// storedFiles is a part's files decoded into their arrays, and every array
// looked up that was missing or of the wrong type.
type storedFiles struct {
	arrays [3]map[string]array
	err    error
}

func decodeFiles(files [][]byte) (*storedFiles, error) {
	if len(files) != len(fileNames) {
		return nil, fmt.Errorf("want %d files, got %d", len(fileNames), len(files))
	}
	s := &storedFiles{}
	for i, b := range files {
		m, err := decodeArrays(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileNames[i], err)
		}
		s.arrays[i] = m
	}
	return s, nil
}

// get returns the array name of file, which must have type typ; if it has
// not, s.err says so and the array is empty.
func (s *storedFiles) get(file int, name string, typ int) array {
	a, ok := s.arrays[file][name]
	switch {
	case !ok:
		s.err = errors.Join(s.err, fmt.Errorf("%s: no array %q", fileNames[file], name))
	case typ == typeInt32 && a.i32 == nil, typ == typeInt64 && a.i64 == nil, typ == typeFloat32 && a.f32 == nil:
		s.err = errors.Join(s.err, fmt.Errorf("%s: array %q has the wrong type", fileNames[file], name))
	}
	return a
}

// topology is the arrays of topology.bin.
type topology struct {
	meta                        []int64 // id, parts, nodes, layout, classes
	owned, halo                 []int32
	haloStart, offsets, sendOff []int64
	indices, send, colDeg       []int32
}

func (s *storedFiles) topology() *topology {
	get := func(name string, typ int) array { return s.get(topologyFile, name, typ) }
	return &topology{
		meta:      get("meta", typeInt64).i64,
		owned:     get("owned", typeInt32).i32,
		halo:      get("halo", typeInt32).i32,
		haloStart: get("halo_start", typeInt64).i64,
		offsets:   get("local_offsets", typeInt64).i64,
		indices:   get("local_indices", typeInt32).i32,
		sendOff:   get("send_offsets", typeInt64).i64,
		send:      get("send", typeInt32).i32,
		colDeg:    get("col_degree", typeInt32).i32,
	}
}

// check checks that topology.bin describes one part of a graph: every node,
// local column and send row in range, every offset array consistent.
func (t *topology) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("topology.bin: "+format, args...)
	}
	if len(t.meta) != 5 {
		return bad("meta has %d values, want 5", len(t.meta))
	}
	id, k, nodes, classes := t.meta[0], t.meta[1], t.meta[2], t.meta[4]
	switch {
	case k < 1 || k > maxParts || id < 0 || id >= k:
		return bad("part %d of %d", id, k)
	case nodes < 1 || nodes > math.MaxInt32:
		return bad("%d nodes", nodes)
	case classes < 1 || classes > maxClasses:
		return bad("%d classes", classes)
	}
	if err := ascendingIDs(t.owned, nodes); err != nil {
		return bad("owned: %v", err)
	}
	if v, ok := outside(t.halo, nodes); ok {
		return bad("halo node %d outside [0,%d)", v, nodes)
	}
	if err := checkOffsets(t.haloStart, int(k)+1, int64(len(t.halo))); err != nil {
		return bad("halo_start: %v", err)
	}
	if t.haloStart[id] != t.haloStart[id+1] {
		return bad("the part's own halo block is not empty")
	}
	own := len(t.owned)
	cols := own + len(t.halo)
	if err := checkOffsets(t.offsets, own+1, int64(len(t.indices))); err != nil {
		return bad("local_offsets: %v", err)
	}
	if c, ok := outside(t.indices, int64(cols)); ok {
		return bad("local column %d outside [0,%d)", c, cols)
	}
	if err := checkOffsets(t.sendOff, int(k)+1, int64(len(t.send))); err != nil {
		return bad("send_offsets: %v", err)
	}
	if t.sendOff[id] != t.sendOff[id+1] {
		return bad("the part sends to itself")
	}
	if r, ok := outside(t.send, int64(own)); ok {
		return bad("send row %d outside [0,%d)", r, own)
	}
	if len(t.colDeg) != cols {
		return bad("%d column degrees for %d columns", len(t.colDeg), cols)
	}
	for _, d := range t.colDeg {
		if d < 1 {
			return bad("column degree %d", d)
		}
	}
	return nil
}

// outside returns the first of xs outside [0,n), if there is one.
func outside(xs []int32, n int64) (int32, bool) {
	for _, x := range xs {
		if x < 0 || int64(x) >= n {
			return x, true
		}
	}
	return 0, false
}

// part returns the Part a checked topology describes, without features,
// labels or split.
func (t *topology) part() *Part {
	id, k := int(t.meta[0]), int(t.meta[1])
	own := len(t.owned)
	sp := &Part{Nodes: int(t.meta[2]), Classes: int(t.meta[4]), ColDegree: t.colDeg, Layout: uint64(t.meta[3])}
	p := &sp.Part
	p.ID, p.Owned, p.Halo = id, t.owned, t.halo
	p.HaloStart = make([]int, k+1)
	for i, v := range t.haloStart {
		p.HaloStart[i] = int(v)
	}
	p.Local = &tensor.CSR{Rows: own, Cols: own + len(t.halo), Offsets: t.offsets, Indices: t.indices}
	p.Send = make([][]int32, k)
	for q := range k {
		if q != id {
			p.Send[q] = t.send[t.sendOff[q]:t.sendOff[q+1]:t.sendOff[q+1]]
		}
	}
	return sp
}

// features checks features.bin, whose shape array is shape, against the
// number of owned nodes and returns their features, dense or sparse.
func (s *storedFiles) features(shape []int64, own int) (nn.Features, error) {
	if len(shape) != 4 {
		return nn.Features{}, fmt.Errorf("features.bin: shape has %d values, want 4", len(shape))
	}
	rows, cols := shape[0], shape[1]
	if rows != int64(own) || cols < 1 || cols > maxColumns {
		return nn.Features{}, fmt.Errorf("features.bin: %d×%d features for %d owned nodes", rows, cols, own)
	}
	switch shape[2] {
	case 0:
		return s.denseFeatures(rows, cols)
	case 1:
		return s.sparseFeatures(rows, cols, shape[3] == 1)
	}
	return nn.Features{}, fmt.Errorf("features.bin: storage %d, want 0 (dense) or 1 (sparse)", shape[2])
}

func (s *storedFiles) denseFeatures(rows, cols int64) (nn.Features, error) {
	values := s.get(featuresFile, "values", typeFloat32).f32
	if s.err != nil {
		return nn.Features{}, s.err
	}
	if int64(len(values)) != rows*cols {
		return nn.Features{}, fmt.Errorf("features.bin: %d values for %d×%d", len(values), rows, cols)
	}
	return nn.Features{Dense: &tensor.Matrix{Rows: int(rows), Cols: int(cols), Data: values}}, nil
}

// sparseFeatures reads CSR rows; without values every entry is a one.
func (s *storedFiles) sparseFeatures(rows, cols int64, hasValues bool) (nn.Features, error) {
	offsets, indices := s.get(featuresFile, "offsets", typeInt64).i64, s.get(featuresFile, "indices", typeInt32).i32
	var values []float32
	if hasValues {
		values = s.get(featuresFile, "values", typeFloat32).f32
	}
	if s.err != nil {
		return nn.Features{}, s.err
	}
	if err := checkOffsets(offsets, int(rows)+1, int64(len(indices))); err != nil {
		return nn.Features{}, fmt.Errorf("features.bin: offsets: %v", err)
	}
	if values != nil && len(values) != len(indices) {
		return nn.Features{}, fmt.Errorf("features.bin: %d values for %d entries", len(values), len(indices))
	}
	if c, ok := outside(indices, cols); ok {
		return nn.Features{}, fmt.Errorf("features.bin: column %d outside [0,%d)", c, cols)
	}
	return nn.Features{Sparse: &tensor.CSR{Rows: int(rows), Cols: int(cols), Offsets: offsets, Indices: indices, Values: values}}, nil
}

// labelsAndSplit is the arrays of labels.bin: the owned nodes' labels (-1
// for none) and the split as local rows.
type labelsAndSplit struct {
	labels, train, val, test []int32
}

func (s *storedFiles) labels() *labelsAndSplit {
	get := func(name string) []int32 { return s.get(labelsFile, name, typeInt32).i32 }
	return &labelsAndSplit{labels: get("labels"), train: get("train"), val: get("val"), test: get("test")}
}

// check checks labels.bin against the number of owned nodes and classes: a
// label or none for each owned node, and a split of labelled nodes only.
func (l *labelsAndSplit) check(own int, classes int64) error {
	if len(l.labels) != own {
		return fmt.Errorf("labels.bin: %d labels for %d owned nodes", len(l.labels), own)
	}
	for _, label := range l.labels {
		if label < -1 || int64(label) >= classes {
			return fmt.Errorf("labels.bin: label %d outside [-1,%d)", label, classes)
		}
	}
	for _, rows := range [][]int32{l.train, l.val, l.test} {
		for _, r := range rows {
			if r < 0 || int(r) >= own || l.labels[r] < 0 {
				return fmt.Errorf("labels.bin: split row %d is not a labelled owned node", r)
			}
		}
	}
	return nil
}
