package dataset

import (
	"reflect"
	"strings"
	"testing"
)

// tolokersLikeNPZ is a 4-node heterophilous-graphs archive with two splits.
func tolokersLikeNPZ() []byte {
	return npzBytes(true,
		member{"node_features", npyBytes("<f4", false, []int{4, 2}, le([]float32{1, 0, 0, 1, 0.5, 0.5, 2, 2}))},
		member{"node_labels", npyBytes("<i8", false, []int{4}, le([]int64{0, 1, 0, 1}))},
		member{"edges", npyBytes("<i8", false, []int{3, 2}, le([]int64{0, 1, 1, 2, 2, 3}))},
		member{"train_masks", npyBytes("|b1", false, []int{2, 4}, le([]bool{true, true, false, false, false, false, true, true}))},
		member{"val_masks", npyBytes("|b1", false, []int{2, 4}, le([]bool{false, false, true, false, true, false, false, false}))},
		member{"test_masks", npyBytes("|b1", false, []int{2, 4}, le([]bool{false, false, false, true, false, true, false, false}))},
	)
}

func TestGNNBenchmarkLayout(t *testing.T) {
	z, err := ParseNPZ("tiny.npz", tinyBenchmarkNPZ(true))
	if err != nil {
		t.Fatal(err)
	}
	d, err := npzDataset("tiny", z)
	if err != nil {
		t.Fatal(err)
	}
	// 0→1→2 symmetrised; 2→0 adds (0,2); the self loop 3→3 is dropped.
	wantOffsets := []int64{0, 2, 4, 6, 6}
	wantNeighbors := []int32{1, 2, 0, 2, 0, 1}
	if !reflect.DeepEqual(d.Graph.Offsets, wantOffsets) || !reflect.DeepEqual(d.Graph.Neighbors, wantNeighbors) {
		t.Errorf("graph %v %v, want %v %v", d.Graph.Offsets, d.Graph.Neighbors, wantOffsets, wantNeighbors)
	}
	wantDense := []float32{1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0.5, 0}
	if got := d.DenseFeatures().Data; !reflect.DeepEqual(got, wantDense) {
		t.Errorf("features %v, want %v", got, wantDense)
	}
	if !reflect.DeepEqual(d.Labels, []int32{0, 1, 1, 0}) || !reflect.DeepEqual(d.ClassNames, []string{"a", "bcd"}) {
		t.Errorf("labels %v names %v", d.Labels, d.ClassNames)
	}
}

func TestHeterophilousLayout(t *testing.T) {
	z, err := ParseNPZ("tol.npz", tolokersLikeNPZ())
	if err != nil {
		t.Fatal(err)
	}
	d, err := npzDataset("tol", z)
	if err != nil {
		t.Fatal(err)
	}
	if d.NumUndirectedEdges() != 3 || d.Dense == nil || d.NumFeatures() != 2 || d.NumClasses != 2 {
		t.Fatalf("got %d edges, %d features, %d classes", d.NumUndirectedEdges(), d.NumFeatures(), d.NumClasses)
	}
	want := []Split{
		{Name: "public", Train: []int32{0, 1}, Val: []int32{2}, Test: []int32{3}},
		{Name: "public:1", Train: []int32{2, 3}, Val: []int32{0}, Test: []int32{1}},
	}
	if !reflect.DeepEqual(d.Splits, want) {
		t.Errorf("splits %+v, want %+v", d.Splits, want)
	}
	for spec, idx := range map[string]int{"public": 0, "public:0": 0, "public:1": 1} {
		s, err := d.Split(spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.Train, want[idx].Train) {
			t.Errorf("%s: train %v, want %v", spec, s.Train, want[idx].Train)
		}
	}
	if _, err := d.Split("public:2", 0); err == nil || !strings.Contains(err.Error(), "public:1") {
		t.Errorf("public:2 error %v should list the splits shipped", err)
	}
}

func TestNPZLayoutErrors(t *testing.T) {
	base := func(replace string, m member) []byte {
		z, _ := ParseNPZ("", tinyBenchmarkNPZ(false))
		var ms []member
		for _, name := range z.Names() {
			if name == replace {
				if m.npy != nil {
					ms = append(ms, m)
				}
				continue
			}
			a := z.Arrays[name]
			ms = append(ms, member{name, npyBytes(a.DType, false, a.Shape, a.data)})
		}
		return npzBytes(false, ms...)
	}
	tests := []struct {
		name, wantErr string
		file          []byte
	}{
		{"no labels", `no array "labels"`, base("labels", member{})},
		{"short labels", "array labels has 3 entries for 4 nodes", base("labels", member{"labels", npyBytes("|i1", false, []int{3}, le([]int8{0, 1, 1}))})},
		{"label beyond names", "class_names has 2 names", base("labels", member{"labels", npyBytes("|i1", false, []int{4}, le([]int8{0, 1, 2, 0}))})},
		{"negative label", "label -2", base("labels", member{"labels", npyBytes("|i1", false, []int{4}, le([]int8{0, -2, 1, 0}))})},
		{"edge out of range", "column id 9", base("adj_indices", member{"adj_indices", npyBytes("<i4", false, []int{4}, le([]int32{1, 2, 9, 3}))})},
		{"indptr length", "adj_indptr has 3 entries", base("adj_indptr", member{"adj_indptr", npyBytes("<i4", false, []int{3}, le([]int32{0, 1, 2}))})},
		{"NaN feature", "attr_data: value NaN", base("attr_data", member{"attr_data", npyBytes("<f4", false, []int{3}, le([]float32{1, nan32, 1}))})},
		{"non-square", "want square", base("adj_shape", member{"adj_shape", npyBytes("<i8", false, []int{2}, le([]int64{4, 5}))})},
		{"no nodes", "no nodes", npzBytes(false,
			member{"node_features", npyBytes("<f4", false, []int{0, 2}, nil)},
			member{"node_labels", npyBytes("<i8", false, []int{0}, nil)},
			member{"edges", npyBytes("<i8", false, []int{0, 2}, nil)})},
		{"too many splits", "at most 1000", npzBytes(false,
			member{"node_features", npyBytes("<f4", false, []int{0, 2}, nil)},
			member{"node_labels", npyBytes("<i8", false, []int{0}, nil)},
			member{"edges", npyBytes("<i8", false, []int{0, 2}, nil)},
			member{"train_masks", npyBytes("|b1", false, []int{1 << 30, 0}, nil)})},
		{"unknown layout", "unknown .npz layout", npzBytes(false, member{"x", npyBytes("<f4", false, []int{1}, le([]float32{1}))})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z, err := ParseNPZ("bad.npz", tc.file)
			if err == nil {
				_, err = npzDataset("bad", z)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "bad.npz") {
				t.Fatalf("err = %v, want one naming bad.npz and containing %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzNPZLayout mutates the arrays inside a valid archive rather than the
// zip bytes, whose CRCs reject almost every raw mutation: this reaches the
// layout readers' checks on shapes, ids and labels.
func FuzzNPZLayout(f *testing.F) {
	seed, _ := ParseNPZ("", tinyBenchmarkNPZ(false))
	npy := func(name string) []byte {
		a := seed.Arrays[name]
		return npyBytes(a.DType, false, a.Shape, a.data)
	}
	f.Add(npy("adj_indptr"), npy("adj_indices"), npy("attr_data"), npy("labels"))
	f.Add(npyBytes("<i8", false, []int{5}, le([]int64{0, 1, 1, 2, 4})), npy("adj_indices"), npyBytes("<f8", false, []int{3}, le([]float64{1, 2, 3})), npyBytes("<i4", false, []int{4}, le([]int32{0, 0, 1, -1})))
	tol, _ := ParseNPZ("", tolokersLikeNPZ())
	f.Fuzz(func(t *testing.T, indptr, indices, attrData, labels []byte) {
		var ms []member
		for _, name := range seed.Names() {
			switch name {
			case "adj_indptr":
				ms = append(ms, member{name, indptr})
			case "adj_indices":
				ms = append(ms, member{name, indices})
			case "attr_data":
				ms = append(ms, member{name, attrData})
			case "labels":
				ms = append(ms, member{name, labels})
			default:
				ms = append(ms, member{name, npy(name)})
			}
		}
		for _, b := range [][]byte{npzBytes(false, ms...), tolokersWith(tol, indices, labels)} {
			z, err := ParseNPZ("fuzz.npz", b)
			if err != nil {
				continue
			}
			if d, err := npzDataset("fuzz", z); err == nil {
				if err := d.Validate(); err != nil {
					t.Fatalf("reader returned an invalid dataset: %v", err)
				}
			}
		}
	})
}

// tolokersWith replaces the edges and one mask of the Tolokers-like archive.
func tolokersWith(z *NPZ, edges, mask []byte) []byte {
	var ms []member
	for _, name := range z.Names() {
		a := z.Arrays[name]
		b := npyBytes(a.DType, false, a.Shape, a.data)
		switch name {
		case "edges":
			b = edges
		case "val_masks":
			b = mask
		}
		ms = append(ms, member{name, b})
	}
	return npzBytes(false, ms...)
}
