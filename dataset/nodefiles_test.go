package dataset

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// edgeSet lists d's undirected edges as source-id pairs "a-b" with a < b
// by node number, so tests can state them in the file's own ids.
func edgeSet(d *Dataset) []string {
	var out []string
	for u := 0; u < d.NumNodes(); u++ {
		for _, v := range d.Graph.Adj(u) {
			if int(v) > u {
				out = append(out, d.NodeID(u)+"-"+d.NodeID(int(v)))
			}
		}
	}
	return out
}

func TestEdgeListNodeIDs(t *testing.T) {
	tests := []struct {
		name, input string
		ids         []string // nil: ids are node numbers
		nodes       int
		edges       []string
	}{
		{"dense integers", "0 1\n1 3\n", nil, 4, []string{"0-1", "1-3"}},
		{"one large id", "0 2000000000\n", []string{"0", "2000000000"}, 2, []string{"0-2000000000"}},
		{"sparse 64-bit ids", "9000000000000000000\t5\n5\t77\n", []string{"5", "77", "9000000000000000000"}, 3,
			[]string{"5-77", "5-9000000000000000000"}},
		{"strings, sorted by bytes", "bob alice\ncarol,alice\n", []string{"alice", "bob", "carol"}, 3,
			[]string{"alice-bob", "alice-carol"}},
		{"integers then a string", "10 x\n2 10\n", []string{"10", "2", "x"}, 3, []string{"10-2", "10-x"}},
		{"negative ids are names", "-1 0\n", []string{"-1", "0"}, 2, []string{"-1-0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "g.txt", []byte(tc.input))
			d, err := LoadPath(p)
			if err != nil {
				t.Fatal(err)
			}
			if d.NumNodes() != tc.nodes || !reflect.DeepEqual(d.NodeIDs, tc.ids) {
				t.Fatalf("%d nodes, ids %q; want %d, %q", d.NumNodes(), d.NodeIDs, tc.nodes, tc.ids)
			}
			if got := edgeSet(d); !reflect.DeepEqual(got, tc.edges) {
				t.Errorf("edges %q, want %q", got, tc.edges)
			}
			for i := range d.NumNodes() {
				if v, ok := d.NodeIndex(d.NodeID(i)); !ok || int(v) != i {
					t.Errorf("NodeIndex(NodeID(%d)) = %d, %v", i, v, ok)
				}
			}
		})
	}
}

// A line "0 2000000000" is two nodes, not two billion: loading it takes
// kilobytes.
func TestEdgeListLargeIDModestMemory(t *testing.T) {
	p := writeFile(t, t.TempDir(), "g.txt", []byte("0 2000000000\n"))
	var d *Dataset
	var err error
	if a := allocated(func() { d, err = LoadPath(p) }); a > 8<<20 {
		t.Errorf("loading one edge allocated %d bytes", a)
	}
	if err != nil || d.NumNodes() != 2 || d.NumUndirectedEdges() != 1 {
		t.Fatalf("err %v; want 2 nodes and 1 edge", err)
	}
	if v, ok := d.NodeIndex("2000000000"); !ok || v != 1 {
		t.Errorf("NodeIndex(2000000000) = %d, %v; want 1", v, ok)
	}
}

func TestEdgeListIDErrors(t *testing.T) {
	tests := []struct{ name, input, wantErr string }{
		{"a separator without a target", "a b\nc ,\n", "g.txt: line 2: want 2 columns (source, target), found 1"},
		{"three columns", "a b\na b 0.5\n", "g.txt: line 2: want 2 columns (source, target), found more"},
		{"empty target", "a,\n", "g.txt: line 1: want 2 columns"},
		{"long id", "a " + strings.Repeat("x", 2000) + "\n", "g.txt: line 1: a node id longer than 1024 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "g.txt", []byte(tc.input))
			_, err := LoadPath(p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, tc.wantErr)
			}
		})
	}
}

// stringGraph is a path alice-bob-carol-dave with string ids.
func stringGraph(t *testing.T) (*Dataset, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := LoadPath(writeFile(t, dir, "g.tsv", []byte("dave\tcarol\nalice\tbob\nbob\tcarol\n")))
	if err != nil {
		t.Fatal(err)
	}
	return d, dir
}

func TestReadLabels(t *testing.T) {
	tests := []struct {
		name, file, content string
		labels              []int32
		classes             []string
	}{
		{"names with header", "y.csv", "id,label\ncarol,spam\nalice,ham\nbob,spam\n", []int32{0, 1, 1, Unlabelled}, []string{"ham", "spam"}},
		{"integers, tabs", "y.tsv", "dave\t2\nalice\t0\nbob\t-1\n", []int32{0, Unlabelled, Unlabelled, 2}, []string{"0", "1", "2"}},
		{"pandas index header", "y.csv", ",label\ncarol,spam\nalice,ham\n", []int32{0, Unlabelled, 1, Unlabelled}, []string{"ham", "spam"}},
		{"npy in node order", "y.npy", "", []int32{1, 0, -1, 1}, []string{"0", "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := stringGraph(t)
			b := []byte(tc.content)
			if strings.HasSuffix(tc.file, ".npy") {
				b = npyBytes("<i8", false, []int{4}, le([]int64{1, 0, -1, 1}))
			}
			if err := d.AddFiles(NodeFiles{Labels: writeFile(t, dir, tc.file, b)}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Labels, tc.labels) || !reflect.DeepEqual(d.ClassNames, tc.classes) || d.NumClasses != len(tc.classes) {
				t.Errorf("labels %v classes %q, want %v %q", d.Labels, d.ClassNames, tc.labels, tc.classes)
			}
		})
	}
}

func TestReadLabelsErrors(t *testing.T) {
	tests := []struct{ name, file, content, wantErr string }{
		{"unknown id", "y.csv", "alice,1\nerin,0\n", `g.tsv, where a line holding an id alone adds a node in no edge`},
		{"twice", "y.csv", "alice,1\n\nalice,0\n", `y.csv: line 3: node "alice" is labelled again (first on line 1)`},
		{"three columns", "y.csv", "alice,1,2\n", `y.csv: line 1: want 2 columns (node id, label), found 3 in "alice,1,2"`},
		{"empty", "y.csv", "# nothing\n", "y.csv: no labels"},
		{"negative class", "y.csv", "alice,1\nbob,-2\n", `y.csv: line 2: label "-2": a class number is 0 or more (-1, nan or an empty label: unlabelled)`},
		{"a name among numbers", "y.csv", "id,label\nalice,2\nbob,10\ncarol,NA\n", `y.csv: line 4: label "NA" is not a class number, but line 2's "2" is; labels are either all class numbers (integers from 0) or all class names (an unlabelled node: -1, nan or an empty label)`},
		{"a fraction among numbers", "y.csv", "alice,1.5\nbob,1\n", `y.csv: line 1: label "1.5" is not a class number, but line 2's "1" is; labels are either all class numbers (integers from 0) or all class names (an unlabelled node: -1, nan or an empty label)`},
		{"npy length", "y.npy", "", "y.npy: labels have shape (3,), want (4,): one per node; rows in node order follow the node ids sorted (graft data info says how many): key each row by its node id in a text file instead"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := stringGraph(t)
			b := []byte(tc.content)
			if strings.HasSuffix(tc.file, ".npy") {
				b = npyBytes("<i8", false, []int{3}, le([]int64{1, 0, 1}))
			}
			err := d.ReadLabels(writeFile(t, dir, tc.file, b))
			if err == nil || !strings.HasSuffix(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one ending in %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadFeatures(t *testing.T) {
	// Nodes in order: alice, bob, carol, dave.
	dense := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	tests := []struct {
		name, file, content string
		sparse              bool
	}{
		{"keyed by id, any order", "x.csv", "dave,7,8\nalice,1,2\ncarol, 5, 6\nbob,3,4\n", false},
		{"header", "x.csv", "id,a,b\nalice,1,2\nbob,3,4\ncarol,5,6\ndave,7,8\n", false},
		{"plain rows", "x.txt", "1 2\n3\t4\n5 6\n7 8\n", false},
		// pandas: DataFrame.to_csv(index=False), then to_csv() with the
		// index, which heads the index's column with an empty name.
		{"header of names, rows in node order", "x.csv", "f1,f2\n1,2\n3,4\n5,6\n7,8\n", false},
		{"header of names, keyed rows", "x.csv", "user,f2\ncarol,5,6\nalice,1,2\nbob,3,4\ndave,7,8\n", false},
		{"pandas index header", "x.csv", ",f1,f2\nbob,3,4\nalice,1,2\ncarol,5,6\ndave,7,8\n", false},
		{"npy", "x.npy", "", false},
		{"sparse rows", "x.csv", "alice,1,0,0,0\nbob,0,0,2,0\ncarol,0,0,0,0\ndave,0,3,0,0\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := stringGraph(t)
			b := []byte(tc.content)
			if strings.HasSuffix(tc.file, ".npy") {
				b = npyBytes("<f8", false, []int{4, 2}, le([]float64{1, 2, 3, 4, 5, 6, 7, 8}))
			}
			if err := d.AddFiles(NodeFiles{Features: writeFile(t, dir, tc.file, b)}); err != nil {
				t.Fatal(err)
			}
			if tc.sparse {
				want := []float32{1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 3, 0, 0}
				if d.Sparse == nil || !reflect.DeepEqual(d.DenseFeatures().Data, want) {
					t.Errorf("sparse %v, features %v; want sparse storage of %v", d.Sparse != nil, d.DenseFeatures().Data, want)
				}
				return
			}
			if d.Dense == nil || !reflect.DeepEqual(d.Dense.Data, dense) {
				t.Errorf("features %v, want dense %v", d.DenseFeatures().Data, dense)
			}
		})
	}
}

func TestReadFeaturesErrors(t *testing.T) {
	tests := []struct{ name, content, wantErr string }{
		{"missing node", "alice,1\nbob,2\ncarol,3\n", "x.csv: node dave has no feature row (3 of 4 nodes have one)"},
		{"ragged", "1,2\n3\n", "x.csv: line 2: 1 columns, but the first row has 2"},
		{"not a number", "alice,1\nbob,z\n", `x.csv: line 2: column 1: "z" is not a number`},
		{"nan", "1\nnan\n", "x.csv: line 2: column 1 is NaN; features must be finite"},
		{"too few rows", "1\n2\n", "x.csv: 2 feature rows for 4 nodes"},
		{"too many rows", "5\n6\n7\n8\n9\n", "x.csv: line 5: more feature rows than the graph's 4 nodes"},
		{"unknown id", "id,a\nzed,1\n", `x.csv: line 2: node id "zed" is not a node of the graph`},
		{"twice", "alice,1\nalice,1\n", `x.csv: line 2: node "alice" has a second feature row`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := stringGraph(t)
			err := d.ReadFeatures(writeFile(t, dir, "x.csv", []byte(tc.content)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseFloat32MatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "1.0", "0.5", "-0.057943", "3.25", "1e3", "1.5E-7", "16777215", "16777217",
		"0.1", "0.3", "123456.7", "9.999999", "1e10", "1e-10", "1e11", "2.5e-11", ".5", "5.", "+7", "0.00000000001",
		"0.05794300138950348", "1e38", "3.4028235e38", "1e39", "nan", "inf", "-Infinity", "", "-", "1e", "1x", "0x1p-2", "1..2"} {
		want, wantOK := parseFloatSlow([]byte(s))
		got, ok := parseFloat32([]byte(s))
		if ok != wantOK || got != want && !(got != got && want != want) {
			t.Errorf("parseFloat32(%q) = %v, %v; strconv gives %v, %v", s, got, ok, want, wantOK)
		}
	}
	b := []byte("-0.057943")
	if a := testing.AllocsPerRun(100, func() { parseFloat32(b) }); a != 0 {
		t.Errorf("parseFloat32 allocates %v times", a)
	}
}

// FuzzNodeFiles reads an edge list with any ids, then labels and features
// keyed by them.
func FuzzNodeFiles(f *testing.F) {
	f.Add("bob alice\ncarol,alice\n", "id,label\nbob,x\n", "alice,1,2\nbob,3,4\ncarol,0,0\n")
	f.Add("0 2000000000\n", "0\t1\n2000000000\t0\n", "1\n2\n")
	f.Add("1 2\n2 3\n", "1,-1\n", "id a\n0 1\n1 0\n2 0\n3 1\n")
	f.Add("\ufeff\"source\",\"target\"\n\"a b\",\"c\"\n", "\"a b\",\"x, y\"\nc\t\n", "\ufeffid,f\n\"a b\",1\nc,2\n")
	f.Fuzz(func(t *testing.T, edges, labels, features string) {
		dir := t.TempDir()
		d, err := LoadPath(writeFile(t, dir, "g.txt", []byte(edges)))
		if err != nil {
			return
		}
		if d.NumNodes() > 2*len(edges)+isolatedNodes {
			t.Fatalf("%d nodes from %d bytes", d.NumNodes(), len(edges))
		}
		err = d.AddFiles(NodeFiles{Labels: writeFile(t, dir, "y.csv", []byte(labels)), Features: writeFile(t, dir, "x.csv", []byte(features))})
		if err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("files gave an invalid dataset: %v", err)
			}
		}
	})
}

// parseFloat32 agrees with strconv on random decimals of every length,
// around float32 midpoints and at the ends of its range.
func TestParseFloat32Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var cases []string
	for range 200000 {
		digits := 1 + r.IntN(17)
		m := r.Uint64() % uint64(math.Pow10(digits))
		e := r.IntN(60) - 40
		cases = append(cases, strconv.FormatUint(m, 10)+"e"+strconv.Itoa(e))
		f := r.Float32() * float32(math.Pow(10, float64(r.IntN(20)-10)))
		cases = append(cases, strconv.FormatFloat(float64(f), 'f', -1, 32), strconv.FormatFloat(float64(f), 'g', -1, 64))
		// The exact decimal of a float32 midpoint.
		mid := (float64(f) + float64(math.Nextafter32(f, 2*f+1))) / 2
		cases = append(cases, strconv.FormatFloat(mid, 'g', -1, 64))
	}
	for _, s := range cases {
		want, wantOK := parseFloatSlow([]byte(s))
		if got, ok := parseFloat32([]byte(s)); ok != wantOK || math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("parseFloat32(%q) = %v, %v; strconv gives %v, %v", s, got, ok, want, wantOK)
		}
	}
}

// The largest component keeps the source ids of its nodes.
func TestLargestComponentKeepsNodeIDs(t *testing.T) {
	p := writeFile(t, t.TempDir(), "g.txt", []byte("x y\nb a\nc b\n"))
	d, err := LoadPath(p)
	if err != nil {
		t.Fatal(err)
	}
	lcc, err := d.LargestComponent()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(lcc.NodeIDs, want) {
		t.Errorf("ids %q, want %q", lcc.NodeIDs, want)
	}
	// Integer ids that were node numbers are named by them too.
	d, err = LoadPath(writeFile(t, t.TempDir(), "h.txt", []byte("0 1\n2 3\n3 4\n")))
	if err != nil {
		t.Fatal(err)
	}
	if lcc, err = d.LargestComponent(); err != nil || !reflect.DeepEqual(lcc.NodeIDs, []string{"2", "3", "4"}) {
		t.Errorf("ids %q, %v; want 2 3 4", lcc.NodeIDs, err)
	}
}

func TestSplitFileKeyedByID(t *testing.T) {
	d, dir := stringGraph(t)
	if err := d.ReadLabels(writeFile(t, dir, "y.csv", []byte("alice,x\nbob,y\ncarol,x\ndave,y\n"))); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, dir, "split.csv", []byte("id,set\ndave,train\nalice,train\nbob,valid\ncarol,test\n"))
	s, err := d.Split("file:"+p, 0)
	want := Split{Name: "file:" + p, Train: []int32{0, 3}, Val: []int32{1}, Test: []int32{2}}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Fatalf("split %+v, %v; want %+v", s, err, want)
	}
	for _, tc := range []struct{ content, wantErr string }{
		{"alice,train\nalice,test\n", `split.csv: line 2: node "alice" is listed again (first on line 1)`},
		{"alice,holdout\n", `split.csv: line 1: set "holdout": want train, val or test`},
		{"zed,train\n", `split.csv: line 1: node id "zed" is not a node of the graph`},
	} {
		_, err := d.Split("file:"+writeFile(t, dir, "split.csv", []byte(tc.content)), 0)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: err = %v, want %q", tc.content, err, tc.wantErr)
		}
	}
}

// LINQS datasets keep their paper ids, so files keyed by them join.
func TestLINQSNodeIDs(t *testing.T) {
	d, err := EmbeddedCora()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.NodeIDs) != d.NumNodes() {
		t.Fatalf("%d ids for %d nodes", len(d.NodeIDs), d.NumNodes())
	}
	for _, i := range []int{0, 5, 2707} {
		if v, ok := d.NodeIndex(d.NodeID(i)); !ok || int(v) != i {
			t.Errorf("node %d: id %q maps back to %d, %v", i, d.NodeID(i), v, ok)
		}
	}
	dir := t.TempDir()
	p := writeFile(t, dir, "y.csv", []byte(d.NodeID(7)+",1\n"+d.NodeID(9)+",0\n"))
	if err := d.ReadLabels(p); err != nil || d.Labels[7] != 1 || d.Labels[9] != 0 || d.Labels[8] != Unlabelled {
		t.Errorf("labels by paper id: %v, %v", err, d.Labels[7:10])
	}
}

// A line of an edge list holding one id alone is a node in no edge: the
// way to give an isolated node labels and features. An id that is no node
// is an error that says so.
func TestEdgeListIsolatedNodes(t *testing.T) {
	dir := t.TempDir()
	edges := writeFile(t, dir, "g.txt", []byte("alice bob\ncarol\n\"dave\"\nbob\n"))
	d, err := LoadPath(edges)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.NodeIDs, []string{"alice", "bob", "carol", "dave"}) || d.Graph.NumEdges() != 2 {
		t.Fatalf("nodes %q, %d directed edges; want alice, bob, carol and dave and 2", d.NodeIDs, d.Graph.NumEdges())
	}
	for _, id := range []string{"carol", "dave"} {
		if v, ok := d.NodeIndex(id); !ok || d.Graph.Degree(int(v)) != 0 {
			t.Errorf("node %s: present %v, want an isolated node", id, ok)
		}
	}
	labels := writeFile(t, dir, "y.csv", []byte("alice,a\nbob,b\ncarol,a\ndave,b\n"))
	features := writeFile(t, dir, "x.csv", []byte("alice,1\nbob,2\ncarol,3\ndave,4\n"))
	if err := d.AddFiles(NodeFiles{Labels: labels, Features: features}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Labels, []int32{0, 1, 0, 1}) || d.Dense.At(2, 0) != 3 {
		t.Errorf("labels %v, features %v", d.Labels, d.Dense.Data)
	}
	// Integer ids: an id alone is node number id.
	n, err := LoadPath(writeFile(t, dir, "n.txt", []byte("0 1\n4\n")))
	if err != nil || n.NumNodes() != 5 || n.Graph.Degree(4) != 0 {
		t.Fatalf("integer ids: %v nodes, err %v; want 5", n.NumNodes(), err)
	}
	d, err = LoadPath(writeFile(t, dir, "h.txt", []byte("alice bob\n")))
	if err != nil {
		t.Fatal(err)
	}
	err = d.ReadLabels(writeFile(t, dir, "z.csv", []byte("alice,a\nerin,b\n")))
	want := `z.csv: line 2: node id "erin" is not a node of the graph (2 nodes); the nodes are the ids of ` + filepath.Join(dir, "h.txt") + `, where a line holding an id alone adds a node in no edge`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v, want one ending in %q", err, want)
	}
}
