package dataset

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// copyDir copies the tiny OGB fixture so a test can break one file.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		writeFile(t, dst, rel, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestReadOGB(t *testing.T) {
	d, err := Load("testdata/ogbn-tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "ogbn-tiny" || d.NumNodes() != 5 || d.NumUndirectedEdges() != 4 || d.NumClasses != 2 {
		t.Fatalf("name %q, %d nodes, %d edges, %d classes", d.Name, d.NumNodes(), d.NumUndirectedEdges(), d.NumClasses)
	}
	if want := []float32{0.5, 1, -1, 0.002, 0, 0, 3.25, 1, 1, 1}; !reflect.DeepEqual(d.Dense.Data, want) {
		t.Errorf("features %v, want %v", d.Dense.Data, want)
	}
	if want := []int32{0, 1, 0, 1, Unlabelled}; !reflect.DeepEqual(d.Labels, want) {
		t.Errorf("labels %v, want %v", d.Labels, want)
	}
	want := Split{Name: "public", Train: []int32{0, 1}, Val: []int32{2}, Test: []int32{3}}
	if s, err := d.Split("public", 0); err != nil || !reflect.DeepEqual(s, want) {
		t.Errorf("split %+v, %v; want %+v", s, err, want)
	}
}

func TestReadOGBErrors(t *testing.T) {
	tests := []struct {
		name, file, content, wantErr string
	}{
		{"edge out of range", "raw/edge.csv.gz", "0,1\n1,5\n", "edge.csv.gz: line 2: node id 5 out of range [0, 4]"},
		{"ragged features", "raw/node-feat.csv.gz", "1,2\n1\n1,1\n1,1\n1,1\n", "node-feat.csv.gz: line 2: 1 columns, but the first row has 2"},
		{"inf feature", "raw/node-feat.csv.gz", "1,2\n1,inf\n1,1\n1,1\n1,1\n", "node-feat.csv.gz: line 2: column 2 is +Inf"},
		{"feature rows", "raw/node-feat.csv.gz", "1,2\n", "1 feature rows for 5 nodes"},
		{"label missing", "raw/node-label.csv.gz", "0\n1\n0\n1\n", "4 labels for 5 nodes"},
		{"multi-label", "raw/node-label.csv.gz", "0,1\n", "multi-label"},
		{"bad label", "raw/node-label.csv.gz", "0\n1\n0.5\n1\n1\n", `line 3: label "0.5"`},
		{"split id", "split/random/test.csv.gz", "9\n", "test.csv.gz: line 1: node id 9 out of range"},
		{"unlabelled in split", "split/random/test.csv.gz", "4\n", "test node 4 has no label"},
		{"truncated gzip", "raw/edge.csv.gz", string(gz(strings.Repeat("0,1\n", 3000))[:40]), "edge.csv.gz: after line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, "testdata/ogbn-tiny")
			data := []byte(tc.content)
			if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
				data = gz(tc.content)
			}
			writeFile(t, dir, tc.file, data)
			_, err := ReadOGB("", dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzOGB(f *testing.F) {
	f.Add([]byte("0.5,1\n-1,2e-3\n"), []byte("0\nnan\n1\n"))
	f.Add(gz("1,2,3\n"), gz("3\n"))
	f.Fuzz(func(t *testing.T, feat, labels []byte) {
		if x, s, err := parseOGBFeatures("feat", bytes.NewReader(feat), 0); err == nil {
			if (x == nil) == (s == nil) {
				t.Fatalf("dense %v and sparse %v features", x != nil, s != nil)
			}
			d := &Dataset{Dense: x, Sparse: s}
			x = d.DenseFeatures()
			if len(x.Data) != x.Rows*x.Cols {
				t.Fatalf("%d values for %s", len(x.Data), x.Shape())
			}
			if err := checkFinite(x.Data, x.Cols); err != nil {
				t.Fatal(err)
			}
			if s != nil && s.Validate() != nil {
				t.Fatal(s.Validate())
			}
		}
		if y, k, err := parseOGBLabels("labels", bytes.NewReader(labels), -1); err == nil {
			for i, c := range y {
				if c < Unlabelled || int(c) >= k {
					t.Fatalf("label %d = %d outside [-1, %d)", i, c, k)
				}
			}
		}
	})
}

// BenchmarkOGBFeatures parses dense float features as OGB writes them
// (2,000 rows of 128 values of 7 to 9 significant digits), plain and
// gzipped; the reported MB/s are of the uncompressed text.
func BenchmarkOGBFeatures(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	var text []byte
	for range 2000 {
		for j := range 128 {
			if j > 0 {
				text = append(text, ',')
			}
			text = strconv.AppendFloat(text, r.NormFloat64(), 'g', -1, 32)
		}
		text = append(text, '\n')
	}
	for _, c := range []struct {
		name string
		in   []byte
	}{{"plain", text}, {"gzip", gz(string(text))}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, _, err := parseOGBFeatures("x", bytes.NewReader(c.in), 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Feature rows stay sparse while at most half their values are nonzero
// and switch to dense storage, once, when they pass that.
func TestOGBFeatureStorage(t *testing.T) {
	tests := []struct {
		text   string
		sparse bool
		values []float32
	}{
		{"0,0,0,0\n1.5,0,0,2\n0,0,0,0\n", true, []float32{0, 0, 0, 0, 1.5, 0, 0, 2, 0, 0, 0, 0}},
		{"0,0,0,0\n1,1,1,1\n1,-1,1,1\n", false, []float32{0, 0, 0, 0, 1, 1, 1, 1, 1, -1, 1, 1}},
		{"1,1\n", false, []float32{1, 1}},
	}
	for _, tc := range tests {
		x, s, err := parseOGBFeatures("f", strings.NewReader(tc.text), 3)
		if err != nil {
			t.Fatal(err)
		}
		d := &Dataset{Dense: x, Sparse: s}
		if (s != nil) != tc.sparse || !reflect.DeepEqual(d.DenseFeatures().Data, tc.values) {
			t.Errorf("%q: sparse %v, values %v; want sparse %v, %v", tc.text, s != nil, d.DenseFeatures().Data, tc.sparse, tc.values)
		}
	}
}
