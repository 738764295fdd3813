package fullgraph

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// Stored parts: graft partition --out DIR/ writes DIR/manifest.json and one
// directory per part, DIR/part-K/, so that each worker of a job reads only
// its own share of the problem: everything PartOf would compute from the
// global graph, features and split.
//
// Each part directory holds three files of the same container format:
// topology.bin (owned and halo ids, the local adjacency, the send lists and
// the halo's global degrees), features.bin (the owned rows of the node
// features) and labels.bin (the owned nodes' labels and the split as local
// rows). A container is the 8-byte magic "GRAFTPT1", a uint32 count, then
// that many arrays, each a name (uint8 length and bytes), a type (1 int32,
// 2 int64, 3 float32), a uint64 element count and the little-endian
// elements; it ends with the CRC-32C of everything before. ReadPart checks
// the checksum, every length and every index before using any of it.

// PartFormat names the version of the stored-part format.
const PartFormat = "graft-parts/1"

const (
	partMagic    = "GRAFTPT1"
	manifestName = "manifest.json"
	maxArrays    = 64
)

// PartManifest describes a directory of stored parts.
type PartManifest struct {
	Format   string `json:"format"`
	Dataset  string `json:"dataset"`
	Split    string `json:"split"`
	Method   string `json:"method"` // how the graph was partitioned
	Nodes    int    `json:"nodes"`
	Parts    int    `json:"parts"`
	Classes  int    `json:"classes"`
	Features int    `json:"features"` // feature columns
	Sparse   bool   `json:"sparse"`   // features stored sparse
	// Layout fingerprints the assignment; every part carries it, and the
	// workers of a job check that they hold parts of the same one.
	Layout string `json:"layout"`
}

// StoredPart is one worker's share of a partitioned problem.
type StoredPart struct {
	Part      partition.Part // ID, Owned, Halo, HaloStart, Local, Send
	Nodes     int            // nodes of the global graph
	Classes   int
	ColDegree []int32 // per local column: the node's global degree in A+I
	Features  nn.Features
	Labels    []int32 // owned rows
	// Train, Val and Test are local rows of owned nodes.
	Train, Val, Test []int32
	Layout           uint64
}

// PartDir is the directory of part id under dir.
func PartDir(dir string, id int) string { return filepath.Join(dir, fmt.Sprintf("part-%d", id)) }

// LayoutFingerprint identifies an assignment (FNV-64a of the parts' owned ids).
func LayoutFingerprint(l *partition.Layout) uint64 {
	h := fnv.New64a()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(l.K))
	h.Write(b[:])
	for _, p := range l.Parts {
		binary.LittleEndian.PutUint32(b[:], uint32(len(p.Owned)))
		h.Write(b[:])
		for _, v := range p.Owned {
			binary.LittleEndian.PutUint32(b[:], uint32(v))
			h.Write(b[:])
		}
	}
	return h.Sum64()
}

// StorePart returns what the worker holding part of layout needs, taken
// from the global problem p.
func StorePart(p Problem, classes int, part *partition.Part, fingerprint uint64) *StoredPart {
	sp := &StoredPart{Part: *part, Nodes: p.Graph.N, Classes: classes, Layout: fingerprint,
		ColDegree: ColumnDegrees(p.Graph, part), Labels: make([]int32, len(part.Owned))}
	for i, v := range part.Owned {
		sp.Labels[i] = p.Labels[v]
	}
	switch x := p.Features; {
	case x.Sparse != nil:
		sp.Features = nn.Features{Sparse: sparseRows(x.Sparse, part.Owned)}
	case x.Dense != nil:
		m := tensor.New(len(part.Owned), x.Dense.Cols)
		for i, v := range part.Owned {
			copy(m.Row(i), x.Dense.Row(int(v)))
		}
		sp.Features = nn.Features{Dense: m}
	}
	sp.Train, sp.Val, sp.Test = localRows(p.Train, part.Owned), localRows(p.Val, part.Owned), localRows(p.Test, part.Owned)
	return sp
}

// WriteParts writes every part of layout and then the manifest (so that a
// directory without a manifest is visibly incomplete). m's Parts, Nodes,
// Features, Sparse and Layout are filled in.
func WriteParts(dir string, m PartManifest, p Problem, layout *partition.Layout) error {
	if layout == nil || layout.K < 1 {
		return errors.New("fullgraph: no layout to store")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, manifestName))
	fp := LayoutFingerprint(layout)
	for i := range layout.Parts {
		if err := WritePart(PartDir(dir, i), StorePart(p, m.Classes, &layout.Parts[i], fp)); err != nil {
			return err
		}
	}
	m.Format, m.Parts, m.Nodes = PartFormat, layout.K, layout.N
	m.Features, m.Sparse = p.Features.Cols(), p.Features.IsSparse()
	m.Layout = fmt.Sprintf("%016x", fp)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, manifestName), append(b, '\n'))
}

// ReadPartManifest reads dir's manifest.
func ReadPartManifest(dir string) (*PartManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, fmt.Errorf("part directory: %w (write one with graft partition --out DIR/)", err)
	}
	var m PartManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("part directory %s: %s: %w", dir, manifestName, err)
	}
	if m.Format != PartFormat {
		return nil, fmt.Errorf("part directory %s: format %q, want %q", dir, m.Format, PartFormat)
	}
	if m.Parts < 1 || m.Classes < 1 || m.Nodes < m.Parts {
		return nil, fmt.Errorf("part directory %s: manifest says %d parts, %d nodes, %d classes", dir, m.Parts, m.Nodes, m.Classes)
	}
	return &m, nil
}

// partFiles are the files of a part directory.
var partFiles = []string{"topology.bin", "features.bin", "labels.bin"}

// WritePart writes sp into dir (created if needed).
func WritePart(dir string, sp *StoredPart) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, arrays := range sp.arrays() {
		if err := writeAtomic(filepath.Join(dir, partFiles[i]), encodeArrays(arrays)); err != nil {
			return err
		}
	}
	return nil
}

// ReadPart reads part id of the parts stored under dir.
func ReadPart(dir string, id int) (*StoredPart, error) {
	pd := PartDir(dir, id)
	files := make([][]byte, len(partFiles))
	for i, name := range partFiles {
		b, err := os.ReadFile(filepath.Join(pd, name))
		if err != nil {
			return nil, fmt.Errorf("stored part %d: %w", id, err)
		}
		files[i] = b
	}
	sp, err := DecodePart(files...)
	if err != nil {
		return nil, fmt.Errorf("stored part %d (%s): %w", id, pd, err)
	}
	if sp.Part.ID != id {
		return nil, fmt.Errorf("stored part %d (%s) says it is part %d", id, pd, sp.Part.ID)
	}
	return sp, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// array is one named array of a container: exactly one of i32, i64, f32.
type array struct {
	name string
	i32  []int32
	i64  []int64
	f32  []float32
}

const (
	typeInt32   = 1
	typeInt64   = 2
	typeFloat32 = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeArrays(arrays []array) []byte {
	b := append([]byte(partMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(partMagic):], uint32(len(arrays)))
	for _, a := range arrays {
		b = append(b, byte(len(a.name)))
		b = append(b, a.name...)
		switch {
		case a.i64 != nil:
			b = append(b, typeInt64)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(a.i64)))
			for _, v := range a.i64 {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		case a.f32 != nil:
			b = append(b, typeFloat32)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(a.f32)))
			for _, v := range a.f32 {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		default:
			b = append(b, typeInt32)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(a.i32)))
			for _, v := range a.i32 {
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			}
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeArrays parses a container, checking its checksum and every length.
func decodeArrays(b []byte) (map[string]array, error) {
	if len(b) < len(partMagic)+8 || string(b[:len(partMagic)]) != partMagic {
		return nil, fmt.Errorf("not a stored part file or truncated (%d bytes)", len(b))
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("checksum mismatch: the file is corrupt or incomplete")
	}
	n := binary.LittleEndian.Uint32(body[len(partMagic):])
	if n > maxArrays {
		return nil, fmt.Errorf("%d arrays, at most %d expected", n, maxArrays)
	}
	rest := body[len(partMagic)+4:]
	out := make(map[string]array, n)
	for range n {
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+9 {
			return nil, errors.New("truncated array header")
		}
		name := string(rest[1 : 1+rest[0]])
		rest = rest[1+len(name):]
		typ, count := rest[0], binary.LittleEndian.Uint64(rest[1:9])
		rest = rest[9:]
		size := uint64(4)
		if typ == typeInt64 {
			size = 8
		} else if typ != typeInt32 && typ != typeFloat32 {
			return nil, fmt.Errorf("array %q: unknown type %d", name, typ)
		}
		if count > uint64(len(rest))/size {
			return nil, fmt.Errorf("array %q: %d elements in %d bytes", name, count, len(rest))
		}
		data := rest[:count*size]
		rest = rest[count*size:]
		a := array{name: name}
		switch typ {
		case typeInt32:
			a.i32 = make([]int32, count)
			for i := range a.i32 {
				a.i32[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
			}
		case typeInt64:
			a.i64 = make([]int64, count)
			for i := range a.i64 {
				a.i64[i] = int64(binary.LittleEndian.Uint64(data[8*i:]))
			}
		case typeFloat32:
			a.f32 = make([]float32, count)
			for i := range a.f32 {
				a.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("array %q appears twice", name)
		}
		out[name] = a
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the last array", len(rest))
	}
	return out, nil
}

// arrays lays sp out as the three files' arrays.
func (sp *StoredPart) arrays() [3][]array {
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

// DecodePart rebuilds a stored part from the bytes of its three files,
// checking every length and index, so that what it returns is safe to train
// on; it never panics.
func DecodePart(files ...[]byte) (*StoredPart, error) {
	if len(files) != len(partFiles) {
		return nil, fmt.Errorf("want %d files, got %d", len(partFiles), len(files))
	}
	var maps [3]map[string]array
	for i, b := range files {
		m, err := decodeArrays(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", partFiles[i], err)
		}
		maps[i] = m
	}
	var err error
	get := func(file int, name string, typ int) array {
		a, ok := maps[file][name]
		switch {
		case !ok:
			err = errors.Join(err, fmt.Errorf("%s: no array %q", partFiles[file], name))
		case typ == typeInt32 && a.i32 == nil, typ == typeInt64 && a.i64 == nil, typ == typeFloat32 && a.f32 == nil:
			err = errors.Join(err, fmt.Errorf("%s: array %q has the wrong type", partFiles[file], name))
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
	bad := func(format string, args ...any) (*StoredPart, error) {
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
	sp := &StoredPart{Nodes: int(nodes), Classes: int(classes), ColDegree: colDeg, Layout: uint64(meta[3])}
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

func ascendingIDs(ids []int32, n int64) error {
	for i, v := range ids {
		if v < 0 || int64(v) >= n {
			return fmt.Errorf("node %d outside [0,%d)", v, n)
		}
		if i > 0 && v <= ids[i-1] {
			return fmt.Errorf("ids not ascending at %d", i)
		}
	}
	return nil
}

// checkOffsets checks that off has n entries, starts at 0, never decreases
// and ends at total.
func checkOffsets(off []int64, n int, total int64) error {
	if len(off) != n {
		return fmt.Errorf("%d offsets, want %d", len(off), n)
	}
	if off[0] != 0 || off[n-1] != total {
		return fmt.Errorf("offsets run from %d to %d, want 0 to %d", off[0], off[n-1], total)
	}
	for i := 1; i < n; i++ {
		if off[i] < off[i-1] {
			return fmt.Errorf("offsets decrease at %d", i)
		}
	}
	return nil
}

// Data returns what the worker holding sp trains on, like PartOf; halo
// connects it to the other workers (nil with one part).
func (sp *StoredPart) Data(halo nn.Halo) (Data, error) {
	part := &sp.Part
	ops, err := localOperatorsWithDegrees(part, sp.ColDegree)
	if err != nil {
		return Data{}, err
	}
	ids := make([]int32, 0, len(part.Owned)+len(part.Halo))
	ids = append(append(ids, part.Owned...), part.Halo...)
	if len(part.Halo) == 0 {
		halo = nil
	}
	lg, err := nn.NewLocalGraph(ops, ids, halo)
	if err != nil {
		return Data{}, err
	}
	return Data{Graph: lg, Features: sp.Features, Labels: sp.Labels, Train: sp.Train, Val: sp.Val, Test: sp.Test}, nil
}

// partsSite is where the workers check that they hold parts of one layout.
const partsSite = "parts.check"

// RunStoredWorker is RunWorker for a worker that holds only its stored
// part: sp must be part c.Rank() of a layout with c.Size() parts, and the
// workers check that their parts come from the same layout.
func RunStoredWorker(ctx context.Context, c comm.Communicator, cfg Config, sp *StoredPart, opts DistOptions, onEpoch func(DistMetrics) error) (Result, *Trainer, error) {
	k := len(sp.Part.HaloStart) - 1
	if k != c.Size() || sp.Part.ID != c.Rank() {
		return Result{}, nil, fmt.Errorf("fullgraph: rank %d of %d holds stored part %d of %d", c.Rank(), c.Size(), sp.Part.ID, k)
	}
	if opts.Link != nil {
		c = comm.WithLink(c, *opts.Link)
	}
	mine := binary.LittleEndian.AppendUint64(nil, sp.Layout)
	send, recv := make([][]byte, k), make([][]byte, k)
	for p := range send {
		send[p] = mine
	}
	if err := c.AllToAll(partsSite, send, recv); err != nil {
		return Result{}, nil, fmt.Errorf("fullgraph: checking the stored parts: %w", err)
	}
	for p, b := range recv {
		if len(b) != 8 || binary.LittleEndian.Uint64(b) != sp.Layout {
			return Result{}, nil, fmt.Errorf("fullgraph: rank %d holds a part of a different partition than rank %d (layout fingerprints differ)", p, c.Rank())
		}
	}
	var ex *Exchange
	var halo nn.Halo
	if k > 1 {
		var codec compress.Compressor
		if opts.Codec != "" {
			var err error
			if codec, err = compress.New(opts.Codec); err != nil {
				return Result{}, nil, err
			}
		}
		sched := opts.Schedule
		if sched != nil {
			sched = compress.Copy(sched)
		}
		var err error
		if ex, err = NewExchange(c, &sp.Part, codec, sched, cfg.Model.Seed, max(cfg.Model.Layers, 1)); err != nil {
			return Result{}, nil, err
		}
		halo = ex
		cfg.Reducer = &CommReducer{Comm: c}
		cfg.Exchange = ex
	}
	d, err := sp.Data(halo)
	if err != nil {
		return Result{}, nil, err
	}
	return runWorkerData(ctx, c, cfg, d, ex, opts, onEpoch)
}
