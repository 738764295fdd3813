package dataset

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/internal/datatest"
)

func TestParseEdgeList(t *testing.T) {
	tests := []struct {
		name     string
		input    []byte
		n        int
		wantN    int
		src, dst []int32
	}{
		{"tabs", []byte("0\t1\n1\t2\n"), 0, 3, []int32{0, 1}, []int32{1, 2}},
		{"spaces and CRLF", []byte("0  1\r\n 3 2 \r\n"), 0, 4, []int32{0, 3}, []int32{1, 2}},
		{"commas", []byte("0,1\n2 , 0\n"), 0, 3, []int32{0, 2}, []int32{1, 0}},
		{"comments and blanks", []byte("# header\n% mm\n\n0\t1\n   \n"), 0, 2, []int32{0}, []int32{1}},
		{"no final newline", []byte("4\t5"), 0, 6, []int32{4}, []int32{5}},
		{"given n", []byte("0\t1\n"), 10, 10, []int32{0}, []int32{1}},
		{"gzip", gz("# c\n0\t1\n2\t3\n"), 0, 4, []int32{0, 2}, []int32{1, 3}},
		{"empty", nil, 0, 0, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			el, err := ParseEdgeList("e.tsv", bytes.NewReader(tc.input), tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if el.N != tc.wantN || !reflect.DeepEqual(el.Src, tc.src) || !reflect.DeepEqual(el.Dst, tc.dst) {
				t.Errorf("got n=%d %v→%v, want n=%d %v→%v", el.N, el.Src, el.Dst, tc.wantN, tc.src, tc.dst)
			}
		})
	}
}

func TestParseEdgeListErrors(t *testing.T) {
	whole := gz(strings.Repeat("1\t2\n", 1000))
	tests := []struct {
		name, input, wantErr string
		n                    int
	}{
		{"one column", "0\t1\n5\n", "line 2: want 2 columns", 0},
		{"three columns", "0\t1\t0.5\n", "line 1: want 2 columns (source, target), found more", 0},
		{"negative", "0\t-1\n", `line 1: "-1" is not a non-negative integer`, 0},
		{"word", "a\tb\n", `line 1: "a" is not`, 0},
		{"out of range", "0\t1\n0\t10\n", "line 2: node id 10 out of range [0, 9]", 10},
		{"too large", "0\t99999999999\n", "out of range", 0},
		{"truncated gzip", string(whole[:len(whole)-12]), "gzip stream is truncated", 0},
		{"corrupt gzip header", "\x1f\x8b\x00", "bad gzip header", 0},
		{"long line", strings.Repeat("1", readBufferSize+10), "longer than", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEdgeList("e.tsv", strings.NewReader(tc.input), tc.n)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "e.tsv") {
				t.Fatalf("err = %v, want one starting with e.tsv and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestEdgeListDataset(t *testing.T) {
	// Duplicates, both directions and a self loop collapse to one undirected
	// edge per pair.
	p := writeFile(t, t.TempDir(), "g.txt", []byte("0 1\n1 0\n0 1\n2 2\n1 2\n"))
	d, err := LoadPath(p)
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes() != 3 || d.NumUndirectedEdges() != 2 || d.Labels != nil || d.NumFeatures() != 0 || d.Name != "g.txt" {
		t.Errorf("got %d nodes, %d edges, name %q", d.NumNodes(), d.NumUndirectedEdges(), d.Name)
	}
	if _, err := d.Split("random:1:1", 1); err == nil || !strings.Contains(err.Error(), "no labels") {
		t.Errorf("split on unlabelled graph: err = %v", err)
	}
	empty := writeFile(t, t.TempDir(), "empty.txt", []byte("# nothing\n"))
	if _, err := LoadPath(empty); err == nil || !strings.Contains(err.Error(), "empty.txt: no edges") {
		t.Errorf("empty edge list: err = %v", err)
	}
}

func FuzzEdgeList(f *testing.F) {
	f.Add([]byte("0\t1\n1 2\n# c\n3,4\n"), 0)
	f.Add(gz("0\t1\n"), 5)
	f.Add([]byte("% x\n\n 7 \t 8 \r\n"), 0)
	f.Add([]byte("0 2147483646\n"), 0) // one large id: 2^31 nodes
	f.Add([]byte("1048577 3\n"), 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		n %= 1 << 20 // keep the node count small enough to build
		var el *EdgeList
		var err error
		// An edge list's nodes cost memory only as far as its edges justify
		// them (gzip inflates up to about 1032:1).
		limit := uint64(len(b))*maxDeflateRatio*64 + 256<<20
		if a := allocated(func() { el, err = ParseEdgeList("fuzz", bytes.NewReader(b), n) }); a > limit {
			t.Fatalf("a %d-byte edge list allocated %d bytes", len(b), a)
		}
		if err != nil {
			return
		}
		if len(el.Src) != len(el.Dst) {
			t.Fatalf("%d sources, %d targets", len(el.Src), len(el.Dst))
		}
		if el.N > 1<<20 {
			return // valid but too large to build quickly
		}
		g, err := undirected(el.N, el.Src, el.Dst)
		if err != nil {
			t.Fatalf("parsed edges do not build: %v", err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkCNR2000 measures the largest staged graph: parsing the gzipped
// arc list, then building the symmetrised CSR.
func BenchmarkCNR2000(b *testing.B) {
	path := datatest.Require(b, "webgraph/cnr-2000.arcs.tsv.gz")
	b.Run("parse", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := ReadEdgeList(path, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := loadEdgeListDataset("cnr-2000", path, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
