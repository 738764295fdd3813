package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoCommunities writes an edge list of two cliques of string-named nodes
// ("a0".."a9" and "b0".."b9", joined by one edge), their labels as an
// id,label CSV and their features as id-keyed CSV rows, and returns the
// three paths.
func twoCommunities(t *testing.T) (edges, labels, features string) {
	t.Helper()
	dir := t.TempDir()
	var e, y, x strings.Builder
	for _, c := range []string{"a", "b"} {
		for i := range 10 {
			for j := i + 1; j < 10; j++ {
				fmt.Fprintf(&e, "%s%d\t%s%d\n", c, i, c, j)
			}
		}
	}
	e.WriteString("a0 b0\n")
	y.WriteString("id,label\n")
	for i := 9; i >= 0; i-- { // any order: rows are joined by id
		for _, c := range []string{"b", "a"} {
			fmt.Fprintf(&y, "%s%d,%s\n", c, i, map[string]string{"a": "red", "b": "blue"}[c])
			fmt.Fprintf(&x, "%s%d,%d,%d,0.5\n", c, i, i%3, (i+1)%2)
		}
	}
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("g.tsv", e.String()), write("y.csv", y.String()), write("x.csv", x.String())
}

func TestDataInfoOwnFiles(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	info := dataInfoOf(t, edges, "--labels", labels, "--features", features)
	if info.Nodes != 20 || info.NodeIDs != "renumbered" || info.UndirectedEdges != 91 || info.Features != 3 || len(info.Classes) != 2 ||
		info.Classes[0] != (classInfo{"blue", 10}) || info.Classes[1] != (classInfo{"red", 10}) || info.Unlabelled != 0 {
		t.Errorf("info %+v", info)
	}
}

func TestTrainOwnFiles(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	code, stdout, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features,
		"--split", "frac:0.5:0.25", "--epochs", "30", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum["dataset"] != "g.tsv" || sum["test_acc"] == nil {
		t.Errorf("summary %s", stdout)
	}
}

// A single edge to node 2000000000 is a graph of two nodes: before ids
// were renumbered it asked for 16 GB.
func TestDataInfoLargeNodeID(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte("0 2000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	info := dataInfoOf(t, p)
	if info.Nodes != 2 || info.UndirectedEdges != 1 || info.NodeIDs != "renumbered" {
		t.Errorf("%d nodes, %d edges; want 2 and 1", info.Nodes, info.UndirectedEdges)
	}
}

func TestOwnFilesErrors(t *testing.T) {
	edges, labels, _ := twoCommunities(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("a b\nc d e\n"), 0o644)
	badLabels := filepath.Join(dir, "badlabels.csv")
	os.WriteFile(badLabels, []byte("a0,red\nzz,blue\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"data", "info", bad}, "bad.tsv: line 2: want 2 columns (source, target), found more"},
		{[]string{"train", "--dataset", bad}, "bad.tsv: line 2: want 2 columns"},
		{[]string{"data", "info", edges, "--labels", badLabels}, `badlabels.csv: line 2: node id "zz" is not a node of the graph (20 nodes)`},
		{[]string{"data", "info", edges, "--features", labels}, `y.csv: line 2: column 1: "blue" is not a number`},
	}
	for _, tc := range tests {
		code, _, stderr := runGraft(t, tc.args...)
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// npy encodes a version 1.0 .npy array as numpy writes it.
func npy(descr string, shape string, data any) []byte {
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)+1))
	b.WriteString(hdr + "\n")
	if s, ok := data.(string); ok {
		b.WriteString(s)
	} else {
		binary.Write(&b, binary.LittleEndian, data)
	}
	return b.Bytes()
}

// saveNPZ writes what scipy.sparse.save_npz writes for a csr matrix.
func saveNPZ(t *testing.T, path string, rows, cols int64, indptr, indices []int32, data []float64) {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range []struct {
		name string
		npy  []byte
	}{
		{"indices", npy("<i4", fmt.Sprintf("(%d,)", len(indices)), indices)},
		{"indptr", npy("<i4", fmt.Sprintf("(%d,)", len(indptr)), indptr)},
		{"format", npy("|S3", "()", "csr")},
		{"shape", npy("<i8", "(2,)", []int64{rows, cols})},
		{"data", npy("<f8", fmt.Sprintf("(%d,)", len(data)), data)},
	} {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: m.name + ".npy", Method: zip.Deflate})
		w.Write(m.npy)
	}
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A scipy.sparse adjacency matrix is the graph; another is the features,
// and a .npy the labels.
func TestTrainScipySparse(t *testing.T) {
	dir := t.TempDir()
	adj, feats, labels := filepath.Join(dir, "adj.npz"), filepath.Join(dir, "x.npz"), filepath.Join(dir, "y.npy")
	// A ring of 12 nodes; features one-hot of i%4; labels i%2.
	var ptr, idx, fptr, fidx []int32
	var ones, fones []float64
	y := make([]int64, 12)
	for i := range int32(12) {
		ptr, fptr = append(ptr, int32(len(idx))), append(fptr, i)
		idx, ones = append(idx, (i+1)%12), append(ones, 1)
		fidx, fones = append(fidx, i%4), append(fones, 1)
		y[i] = int64(i % 2)
	}
	saveNPZ(t, adj, 12, 12, append(ptr, 12), idx, ones)
	saveNPZ(t, feats, 12, 4, append(fptr, 12), fidx, fones)
	os.WriteFile(labels, npy("<i8", "(12,)", y), 0o644)

	code, stdout, stderr := runGraft(t, "data", "info", adj, "--features", feats, "--labels", labels, "--json")
	var info dataInfo
	if code != 0 || json.Unmarshal([]byte(stdout), &info) != nil {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if info.Nodes != 12 || info.UndirectedEdges != 12 || info.Features != 4 || info.FeatureStorage != "sparse" || len(info.Classes) != 2 {
		t.Errorf("info %+v", info)
	}
	code, stdout, stderr = runGraft(t, "train", "--dataset", adj, "--features", feats, "--labels", labels,
		"--split", "random:2:2", "--epochs", "5", "--json")
	if code != 0 || !strings.Contains(stdout, `"test_acc"`) {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}

// An OGB raw-layout directory whose features are mostly zeros is read
// into sparse storage, and data info reports how long reading took and
// the memory it peaked at.
func TestDataInfoOGBReadCost(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "ogbn-sparse", "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	var feat, label, edge strings.Builder
	for i := range 200 {
		row := make([]string, 50)
		for j := range row {
			row[j] = "0.0"
		}
		row[i%50] = "1.5"
		feat.WriteString(strings.Join(row, ",") + "\n")
		fmt.Fprintf(&label, "%d\n", i%3)
		fmt.Fprintf(&edge, "%d,%d\n", i, (i+1)%200)
	}
	for name, s := range map[string]string{"node-feat.csv": feat.String(), "node-label.csv": label.String(), "edge.csv": edge.String()} {
		if err := os.WriteFile(filepath.Join(raw, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	info := dataInfoOf(t, filepath.Join(dir, "ogbn-sparse"))
	if info.Nodes != 200 || info.Features != 50 || info.FeatureStorage != "sparse" || info.FeatureNonzeros != 200 {
		t.Errorf("info %+v; want 200 nodes, 50 features stored sparse with 200 nonzeros", info)
	}
	if info.ReadSeconds <= 0 || info.ReadSeconds > info.LoadSeconds || info.ReadRSSBytes < 1<<20 {
		t.Errorf("read %vs of %vs loading, peak %d bytes", info.ReadSeconds, info.LoadSeconds, info.ReadRSSBytes)
	}
}

// Every graft command in docs/data.md runs as written from the
// repository's root.
func TestDocsDataCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/data.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..")
	n := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "graft ") {
			continue
		}
		n++
		if code, _, stderr := runGraft(t, strings.Fields(line)[1:]...); code != 0 {
			t.Errorf("%s: exit %d: %s", line, code, stderr)
		}
	}
	if n < 2 {
		t.Errorf("found %d commands in docs/data.md", n)
	}
}

// graft partition reads the same files: the split's training nodes, drawn
// from the file's labels, are a balance constraint.
func TestPartitionOwnFiles(t *testing.T) {
	edges, labels, _ := twoCommunities(t)
	code, stdout, stderr := runGraft(t, "partition", "--dataset", edges, "--labels", labels, "--parts", "2",
		"--balance", "train", "--split", "frac:0.5:0.25", "--json")
	if code != 0 || !strings.Contains(stdout, `"edge_cut"`) {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}

// An assignment file whose largest part id exceeds the node count is
// refused in one line: the part count it implied was allocated per part,
// and "0\n2147483646\n" crashed graft partition --assign out of memory.
func TestPartitionAssignMorePartsThanNodes(t *testing.T) {
	dir := t.TempDir()
	edges := filepath.Join(dir, "e.txt")
	assign := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(edges, []byte("0 1\n1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(assign, []byte("0\n2147483646\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runGraft(t, "partition", "--dataset", edges, "--assign", assign)
	want := "graft partition: " + assign + ": partition: assignment line 2: part 2147483646 would make more parts than the graph's 3 nodes\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d: %s%s, want %q", code, stdout, stderr, want)
	}
}

// dataInfoOf is graft data info --json of args, which must succeed.
func dataInfoOf(t *testing.T, args ...string) dataInfo {
	t.Helper()
	code, stdout, stderr := runGraft(t, append(append([]string{"data", "info"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var info dataInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatal(err)
	}
	return info
}

// A graph without features trains on a constant input, which the run
// says, naming the flag that gives features; with them it says nothing.
func TestTrainNotesMissingFeatures(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	const note = "g.tsv has no node features: every node's input is the constant 1"
	for _, tt := range []struct {
		args []string
		note bool
	}{
		{nil, true},
		{[]string{"--sampler", "neighbor:3,3"}, true},
		{[]string{"--features", features}, false},
	} {
		args := append([]string{"train", "--dataset", edges, "--labels", labels, "--split", "frac:0.5:0.25", "--epochs", "2"}, tt.args...)
		code, _, stderr := runGraft(t, args...)
		if code != 0 || strings.Contains(stderr, note) != tt.note {
			t.Errorf("%v: exit %d, stderr %q; want the note %v", tt.args, code, stderr, tt.note)
		}
	}
}

// A --dataset that is a path (a directory or an extension) and does not
// exist is named as a missing file, with the nearest directory that does
// exist, not as an unknown dataset name; a name is still an unknown name.
func TestTrainMissingDatasetPath(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "g.txt")
	code, _, stderr := runGraft(t, "train", "--dataset", missing, "--epochs", "1")
	if want := "dataset " + missing + ": no such file or directory (" + missing + ": the nearest of its directories that exists is " + dir + ")"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	code, _, stderr = runGraft(t, "train", "--dataset", "corra", "--epochs", "1")
	if code != 1 || !strings.Contains(stderr, `unknown dataset "corra": not a known name`) {
		t.Errorf("a name: exit %d, stderr %q", code, stderr)
	}
}
