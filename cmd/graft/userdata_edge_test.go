package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFiles writes name → text files into a fresh directory and returns
// their paths by name.
func writeFiles(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

// An edge list written by pandas (a source,target header) with features
// in node order: the header is not an edge, so the ids stay node numbers
// and row i of the features is node i.
func TestDataInfoEdgeListHeader(t *testing.T) {
	p := writeFiles(t, map[string]string{
		"g.csv": "source,target\n0,1\n1,2\n2,3\n",
		"x.csv": "0\n1\n2\n3\n",
		"y.csv": "id,label\n0,a\n1,a\n2,b\n3,b\n",
	})
	info := dataInfoOf(t, p["g.csv"], "--features", p["x.csv"], "--labels", p["y.csv"])
	if info.Nodes != 4 || info.UndirectedEdges != 3 || info.NodeIDs != "numbers" || info.Features != 1 {
		t.Errorf("info %+v; want 4 nodes numbered as they are, 3 edges, 1 feature", info)
	}
}

// The header of an edge list is not dropped silently: train and data info
// say on stderr that the first line was read as one, quoting it, and say
// nothing of a header for a file without one.
func TestEdgeListHeaderNote(t *testing.T) {
	p := writeFiles(t, map[string]string{
		"header.csv": "source,target\n0,1\n1,2\n2,3\n",
		"plain.csv":  "0,1\n1,2\n2,3\n",
		"x.csv":      "0\n1\n2\n3\n",
		"y.csv":      "id,label\n0,a\n1,a\n2,b\n3,b\n",
	})
	for _, tc := range []struct {
		file string
		note bool
	}{{"header.csv", true}, {"plain.csv", false}} {
		for _, args := range [][]string{
			{"train", "--dataset", p[tc.file], "--features", p["x.csv"], "--labels", p["y.csv"], "--epochs", "1", "--json"},
			{"data", "info", p[tc.file]},
		} {
			code, _, stderr := runGraft(t, args...)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", args[0], tc.file, code, stderr)
			}
			notes := strings.Count(stderr, "read as a header")
			if tc.note && (notes != 1 || !strings.Contains(stderr, `"source,target"`)) {
				t.Errorf("%s %s: stderr %q; want one note quoting the header", args[0], tc.file, stderr)
			}
			if !tc.note && notes != 0 {
				t.Errorf("%s %s: stderr %q; want no header note", args[0], tc.file, stderr)
			}
		}
	}
}

// Ids up to 2^63-1 are renumbered; the largest plus one overflowed into a
// negative node count.
func TestDataInfoInt64MaxNodeID(t *testing.T) {
	p := writeFiles(t, map[string]string{"g.tsv": "0\t4294967297\n4294967297\t9223372036854775807\n"})
	info := dataInfoOf(t, p["g.tsv"])
	if info.Nodes != 3 || info.UndirectedEdges != 2 || info.NodeIDs != "renumbered" {
		t.Errorf("info %+v; want 3 renumbered nodes and 2 edges", info)
	}
}

// A split that trains on every labelled node (to predict the unlabelled
// ones) has no validation nodes: the run keeps its last epoch rather than
// its first, patience does not stop it, and stderr says so, as it says
// that the test metrics of a split without test nodes mean nothing.
func TestTrainSplitWithoutValidationOrTest(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	var split strings.Builder
	for _, c := range []string{"a", "b"} {
		for i := range 10 {
			fmt.Fprintf(&split, "%s%d,train\n", c, i)
		}
	}
	p := writeFiles(t, map[string]string{"split.csv": split.String()})
	code, stdout, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features,
		"--split", "file:"+p["split.csv"], "--epochs", "12", "--patience", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum["epochs"] != 12.0 || sum["best_epoch"] != 12.0 || sum["stopped_early"] != false {
		t.Errorf("epochs %v, best epoch %v, stopped early %v; want 12, 12, false", sum["epochs"], sum["best_epoch"], sum["stopped_early"])
	}
	for _, want := range []string{"has no validation nodes: the run keeps its last epoch", "has no test nodes"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q; want %q", stderr, want)
		}
	}
}

// A feature file of no columns is refused as it is read, naming it; it
// was read, and training then failed with "nn: 0 input features".
func TestFeaturesWithoutColumns(t *testing.T) {
	edges, _, _ := twoCommunities(t)
	x := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(x, npy("<f4", "(20, 0)", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runGraft(t, "data", "info", edges, "--features", x)
	if code != 1 || !strings.Contains(stderr, "x.npy: features have shape (20, 0): no columns") {
		t.Errorf("exit %d, stderr %q; want the file's shape refused", code, stderr)
	}
}

// Labels as spreadsheets and pandas write them: a UTF-8 byte order mark,
// names in quotes, integer labels written as floats with an empty field
// for a missing one (tab-separated), and a float .npy column with NaN for
// the unlabelled nodes. The byte order mark was read as part of the first
// id, the quotes as part of the names, "7\t" was a line of one column,
// "1.0" a class name and NaN an error.
func TestLabelsAsToolsWriteThem(t *testing.T) {
	edges, _, _ := twoCommunities(t)
	var tsv, quoted strings.Builder
	tsv.WriteString("\ufeffnode\tlabel\n")
	quoted.WriteString("id,label\n")
	y := make([]float64, 20)
	for i := range 20 {
		c, id := i/10, fmt.Sprintf("%c%d", 'a'+i/10, i%10)
		switch i {
		case 3:
			fmt.Fprintf(&tsv, "%s\t\n", id)
			y[i] = math.NaN()
		default:
			fmt.Fprintf(&tsv, "%s\t%d.0\n", id, c)
			y[i] = float64(c)
		}
		fmt.Fprintf(&quoted, "\"%s\",\"class %d, %s\"\n", id, c, []string{"red", "blue"}[c])
	}
	p := writeFiles(t, map[string]string{"y.tsv": tsv.String(), "y.csv": quoted.String()})
	npyPath := filepath.Join(t.TempDir(), "y.npy")
	if err := os.WriteFile(npyPath, npy("<f8", "(20, 1)", y), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels     string
		classes    []classInfo
		unlabelled int
	}{
		{p["y.tsv"], []classInfo{{"0", 9}, {"1", 10}}, 1},
		{p["y.csv"], []classInfo{{"class 0, red", 10}, {"class 1, blue", 10}}, 0},
		{npyPath, []classInfo{{"0", 9}, {"1", 10}}, 1},
	} {
		code, stdout, stderr := runGraft(t, "data", "info", edges, "--labels", tc.labels, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.labels, code, stderr)
		}
		var info dataInfo
		if err := json.Unmarshal([]byte(stdout), &info); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(info.Classes, tc.classes) || info.Unlabelled != tc.unlabelled {
			t.Errorf("%s: classes %v, %d unlabelled; want %v, %d", filepath.Base(tc.labels), info.Classes, info.Unlabelled, tc.classes, tc.unlabelled)
		}
	}
}

// A byte order mark before an edge list's first id made it a string id
// and renumbered every node.
func TestEdgeListByteOrderMark(t *testing.T) {
	p := writeFiles(t, map[string]string{"g.tsv": "\ufeff0\t1\n1\t2\n"})
	info := dataInfoOf(t, p["g.tsv"])
	if info.Nodes != 3 || info.NodeIDs != "numbers" {
		t.Errorf("%d nodes, ids %s; want 3 numbered as they are", info.Nodes, info.NodeIDs)
	}
}

// Ids with a comma (in quotes in the edge list) are quoted in the
// predictions and the node-id file, so that a CSV reader gets them back.
func TestPredictQuotesIDs(t *testing.T) {
	p := writeFiles(t, map[string]string{
		"g.csv": "\"a, b\",c\nc,d\nd,\"a, b\"\ne,\"say \"\"hi\"\"\"\n",
		"y.csv": "\"a, b\",x\nc,y\nd,x\ne,y\n",
	})
	dir := t.TempDir()
	model, out := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "p.csv")
	if code, _, stderr := runGraft(t, "train", "--dataset", p["g.csv"], "--labels", p["y.csv"], "--split", "frac:0.5:0", "--epochs", "2", "--save", model); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runGraft(t, "predict", "--model-file", model, "--out", out); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	for _, f := range []struct {
		path string
		col  int
	}{{out, 0}, {strings.TrimSuffix(out, ".csv") + ".node_ids.csv", 1}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v\n%s", f.path, err, b)
		}
		var ids []string
		for _, r := range rows[1:] {
			ids = append(ids, r[f.col])
		}
		slices.Sort(ids)
		if want := []string{"a, b", "c", "d", "e", `say "hi"`}; !slices.Equal(ids, want) {
			t.Errorf("%s: ids %q; want %q", filepath.Base(f.path), ids, want)
		}
	}
}

// float16 features (<f2) and uint16 labels (<u2) are read; they were
// unsupported dtypes.
func TestHalfFeaturesAndNarrowLabels(t *testing.T) {
	edges, _, _ := twoCommunities(t)
	dir := t.TempDir()
	x, y := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	half, labels := make([]uint16, 20), make([]uint16, 20)
	for i := range half {
		half[i] = 0x3c00 // 1.0
		labels[i] = uint16(i / 10)
	}
	if err := os.WriteFile(x, npy("<f2", "(20, 1)", half), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(y, npy("<u2", "(20,)", labels), 0o644); err != nil {
		t.Fatal(err)
	}
	info := dataInfoOf(t, edges, "--features", x, "--labels", y)
	if info.Features != 1 || len(info.Classes) != 2 || info.Classes[1].Count != 10 {
		t.Errorf("info %+v; want 1 feature and two classes of 10", info)
	}
}
