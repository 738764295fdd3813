package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/maruel/safetensors"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/nn"
)

// trainSaved trains with args plus --json and --save into dir and returns
// the model file and the run's summary.
func trainSaved(t *testing.T, dir, name string, args ...string) (string, map[string]any) {
	t.Helper()
	file := filepath.Join(dir, name)
	code, stdout, stderr := runGraft(t, append([]string{"train", "--json", "--save", file}, args...)...)
	if code != 0 {
		t.Fatalf("train %v: exit %d, stderr:\n%s", args, code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("train summary: %v in %q", err, stdout)
	}
	return file, sum
}

// evaluateJSON runs graft evaluate --json with args and decodes its output.
func evaluateJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runGraft(t, append([]string{"evaluate", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("evaluate %v: exit %d, stderr:\n%s", args, code, stderr)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
		t.Fatalf("evaluate output: %v in %q", err, stdout)
	}
	return ev
}

// TestEvaluateReproducesTraining: a file saved by a training run scores
// exactly the accuracies the run reported for its best epoch, whatever the
// model, the number of workers, the split and the preprocessing, and in
// either parameter layout.
func TestEvaluateReproducesTraining(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"gcn", []string{"--epochs", "15"}},
		{"gcn on 2 parts", []string{"--epochs", "15", "--parts", "2"}},
		{"sage", []string{"--model", "sage", "--epochs", "15", "--lr", "0.01"}},
		{"gat", []string{"--model", "gat", "--epochs", "10"}},
		{"gat on 2 parts in the pyg layout", []string{"--model", "gat", "--epochs", "6", "--parts", "2", "--save-format", "pyg"}},
		{"sage, lcc, normalised, random split", []string{"--model", "sage", "--epochs", "12", "--lr", "0.01", "--lcc", "--normalize",
			"--split", "random:20:30", "--seed", "7", "--row-normalize=false", "--features", "dense"}},
		{"gcn, 3 layers, sampled", []string{"--epochs", "4", "--layers", "3", "--sampler", "neighbor:5,5,5", "--batch-size", "64"}},
		{"sage at bf16, dense features", []string{"--model", "sage", "--epochs", "12", "--lr", "0.01", "--precision", "bf16", "--features", "dense"}},
		{"gcn at bf16 on 2 parts", []string{"--epochs", "15", "--parts", "2", "--precision", "bf16", "--features", "dense"}},
		{"sage, sampled at bf16", []string{"--model", "sage", "--epochs", "8", "--lr", "0.01", "--sampler", "neighbor:5,5", "--batch-size", "64",
			"--precision", "bf16", "--features", "dense"}},
		{"gat, sampled at bf16 on 2 parts", []string{"--model", "gat", "--epochs", "4", "--sampler", "neighbor:5,5", "--batch-size", "64",
			"--parts", "2", "--precision", "bf16", "--features", "dense"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, sum := trainSaved(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".safetensors", tc.args...)
			ev := evaluateJSON(t, "--model-file", file)
			for _, k := range [][2]string{{"train_acc", "train_acc"}, {"val_acc", "best_val_acc"}, {"test_acc", "test_acc"}, {"epoch", "best_epoch"}, {"split", "split"}} {
				if ev[k[0]] != sum[k[1]] {
					t.Errorf("evaluate's %s = %v; the training run reported %s = %v", k[0], ev[k[0]], k[1], sum[k[1]])
				}
			}
			if ev["reproduces_run"] != true {
				t.Errorf("reproduces_run = %v, want true", ev["reproduces_run"])
			}
		})
	}
}

func TestEvaluateText(t *testing.T) {
	dir := t.TempDir()
	file, sum := trainSaved(t, dir, "gcn.safetensors", "--epochs", "10")
	code, stdout, stderr := runGraft(t, "evaluate", "--model-file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"gcn on cora (public split", "train acc", "val acc", "test acc",
		strconv.FormatFloat(sum["test_acc"].(float64), 'f', 4, 64), "the training run reported the same accuracies"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// --split test scores the test set alone.
	ev := evaluateJSON(t, "--model-file", file, "--split", "test")
	if _, ok := ev["train_acc"]; ok || ev["test_acc"] != sum["test_acc"] {
		t.Errorf("--split test gave %v, want test_acc %v alone", ev, sum["test_acc"])
	}
	// Another split: the same model scored on other nodes; no claim of
	// reproducing the run.
	ev = evaluateJSON(t, "--model-file", file, "--split", "random:20:30", "--seed", "3")
	if ev["split"] != "random:20:30" || ev["reproduces_run"] != nil {
		t.Errorf("--split random:20:30 gave %v", ev)
	}
}

// readCSV reads predict's CSV: the header and the rows.
func readCSV(t *testing.T, text string) ([]string, [][]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("not CSV (%v):\n%.300s", err, text)
	}
	return recs[0], recs[1:]
}

func TestPredictOutputs(t *testing.T) {
	dir := t.TempDir()
	file, sum := trainSaved(t, dir, "gcn.safetensors", "--epochs", "20")
	code, stdout, stderr := runGraft(t, "predict", "--model-file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	header, rows := readCSV(t, stdout)
	// Cora's classes have names (its labels' topics): the last column
	// names each node's predicted class.
	if want := []string{"node", "pred", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "class"}; !slices.Equal(header, want) {
		t.Fatalf("header %v, want %v", header, want)
	}
	if len(rows) != 2708 {
		t.Fatalf("%d rows, want one per Cora node (2708)", len(rows))
	}
	cora, err := dataset.Load("cora", "")
	if err != nil {
		t.Fatal(err)
	}
	probs := map[string][]float32{}
	preds := make([]int, len(rows))
	for i, r := range rows {
		if r[0] != cora.NodeID(i) { // Cora's paper ids
			t.Fatalf("row %d is node %s, want %s", i, r[0], cora.NodeID(i))
		}
		p := make([]float32, 7)
		sum := 0.0
		for c := range p {
			v, err := strconv.ParseFloat(r[2+c], 32)
			if err != nil || v < 0 || v > 1 {
				t.Fatalf("row %d: probability %q", i, r[2+c])
			}
			p[c] = float32(v)
			sum += v
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("node %d: probabilities sum to %v", i, sum)
		}
		preds[i], _ = strconv.Atoi(r[1])
		if p[preds[i]] != slices.Max(p) {
			t.Errorf("node %d: predicted %d, which is not the most probable class of %v", i, preds[i], p)
		}
		if r[9] != cora.ClassNames[preds[i]] {
			t.Errorf("node %d: predicted class %d named %q, want %q", i, preds[i], r[9], cora.ClassNames[preds[i]])
		}
		probs[r[0]] = p
	}
	// The predictions score the run's test accuracy on its test set.
	ds, err := dataset.Load("cora", "")
	if err != nil {
		t.Fatal(err)
	}
	split, err := ds.Split("public", 1)
	if err != nil {
		t.Fatal(err)
	}
	correct := 0
	for _, v := range split.Test {
		if int32(preds[v]) == ds.Labels[v] {
			correct++
		}
	}
	if acc := float64(correct) / float64(len(split.Test)); acc != sum["test_acc"] {
		t.Errorf("predictions score %v on the test set; the run reported %v", acc, sum["test_acc"])
	}

	// --split test writes the test nodes, in ascending order, to a CSV file
	// and to a .npy array of the same probabilities.
	test := slices.Sorted(slices.Values(split.Test))
	csvFile, npyFile := filepath.Join(dir, "test.csv"), filepath.Join(dir, "test.npy")
	for _, out := range []string{csvFile, npyFile} {
		if code, _, stderr := runGraft(t, "predict", "--model-file", file, "--split", "test", "--out", out); code != 0 || !strings.Contains(stderr, "wrote 1000 nodes") {
			t.Fatalf("predict --out %s: exit %d, stderr %q", out, code, stderr)
		}
	}
	text, err := os.ReadFile(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	_, testRows := readCSV(t, string(text))
	if len(testRows) != len(test) {
		t.Fatalf("--split test wrote %d rows, want %d", len(testRows), len(test))
	}
	for i, r := range testRows {
		if !slices.Equal(r, rows[test[i]]) {
			t.Fatalf("test row %d is %v, want node %d's row %v", i, r, test[i], rows[test[i]])
		}
	}
	b, err := os.ReadFile(npyFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := dataset.ParseNPY("test", b)
	if err != nil {
		t.Fatal(err)
	}
	data, err := a.Float32s()
	if err != nil || !slices.Equal(a.Shape, []int{1000, 7}) {
		t.Fatalf(".npy shape %v (%v), want [1000 7] float32", a.Shape, err)
	}
	for i, v := range test {
		if got, want := data[7*i:7*i+7], probs[cora.NodeID(int(v))]; !slices.Equal(got, want) {
			t.Fatalf(".npy row %d (node %d) = %v, the CSV has %v", i, v, got, want)
		}
	}
}

func TestPredictErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	file, _ := trainSaved(t, dir, "gcn.safetensors", "--epochs", "2")
	notModel := filepath.Join(dir, "not.safetensors")
	if err := os.WriteFile(notModel, []byte("hello, this is not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Binary files that are no model file: each is named for what it is.
	binary := map[string][]byte{
		"x.npy":  append([]byte("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"), make([]byte, 8)...),
		"x.png":  []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"),
		"x.npz":  []byte("PK\x03\x04\x14\x00\x00\x00\x00\x00arr_0.npy"),
		"x.bin":  {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09},
		"x.ckpt": []byte("GRAFTCK1\x10\x00\x00\x00{}"),
	}
	for name, b := range binary {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A graph of 3 nodes with 1 feature column: not what the model takes.
	edges := filepath.Join(dir, "tiny.edges")
	if err := os.WriteFile(edges, []byte("0 1\n1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no model file", []string{"predict"}, 2, "--model-file is required"},
		{"evaluate without a model file", []string{"evaluate"}, 2, "--model-file is required"},
		{"missing file", []string{"evaluate", "--model-file", filepath.Join(dir, "none.safetensors")}, 1, "no such file"},
		{"not a model", []string{"predict", "--model-file", notModel}, 1, `not a graft model file, the safetensors file graft train --save writes: it begins with text, "hello, this is not a model"`},
		{"a .npy array", []string{"predict", "--model-file", filepath.Join(dir, "x.npy")}, 1, `not a graft model file, the safetensors file graft train --save writes: it is a NumPy .npy array (it begins with "\x93NUMPY")`},
		{"a PNG image", []string{"evaluate", "--model-file", filepath.Join(dir, "x.png")}, 1, `not a graft model file, the safetensors file graft train --save writes: it is a PNG image`},
		{"a zip archive", []string{"evaluate", "--model-file", filepath.Join(dir, "x.npz")}, 1, `not a graft model file, the safetensors file graft train --save writes: it is a zip archive (a NumPy .npz, or a PyTorch .pt/.pth file`},
		{"random bytes", []string{"predict", "--model-file", filepath.Join(dir, "x.bin")}, 1, `not a graft model file, the safetensors file graft train --save writes: it begins with the bytes de ad be ef 01 02`},
		{"a checkpoint", []string{"predict", "--model-file", filepath.Join(dir, "x.ckpt")}, 1, `not a graft model file, the safetensors file graft train --save writes: it is a graft checkpoint`},
		{"an unknown split", []string{"predict", "--model-file", file, "--split", "tset"}, 1, "tset"},
		{"seed without a split spec", []string{"evaluate", "--model-file", file, "--seed", "4"}, 2, "--seed seeds a random split"},
		{"bad output extension", []string{"predict", "--model-file", file, "--out", filepath.Join(dir, "p.txt")}, 2, "want a .csv or .npy file"},
		{"other features", []string{"predict", "--model-file", file, "--dataset", edges}, 1, "the model takes 1433"},
		{"stray argument", []string{"evaluate", "--model-file", file, "cora"}, 2, "all settings are flags"},
		{"bad save format", []string{"train", "--save-format", "keras", "--epochs", "500"}, 2, "want torch or pyg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runGraft(t, tc.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if code != tc.wantCode || !strings.HasPrefix(last, "graft "+tc.args[0]+": ") || !strings.Contains(last, tc.want) {
				t.Errorf("exit %d, last stderr line %q; want exit %d and \"graft %s: …%s…\"", code, last, tc.wantCode, tc.args[0], tc.want)
			}
			if strings.Contains(stderr, "epoch ") {
				t.Errorf("the error came after training started:\n%s", stderr)
			}
		})
	}
}

// TestEvaluateOlderModelFile: a file whose metadata predates the recorded
// architecture (model, dataset, split, epoch and seed only) still loads:
// the architecture follows from its tensors, the input preparation takes
// train's defaults, and stderr says so.
func TestEvaluateOlderModelFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		model string
		args  []string
	}{
		{"gcn", []string{"--epochs", "8", "--hidden", "12"}},
		{"gat", []string{"--model", "gat", "--epochs", "4", "--heads", "3", "--hidden", "5", "--layers", "3"}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			file, sum := trainSaved(t, dir, tc.model+".safetensors", tc.args...)
			saved, err := nn.ReadParamsHeader(file)
			if err != nil {
				t.Fatal(err)
			}
			var cfg nn.Config
			cfg.Model = tc.model
			for k, dst := range map[string]*int{"layers": &cfg.Layers, "hidden": &cfg.Hidden, "heads": &cfg.Heads, "in_features": &cfg.InFeatures, "classes": &cfg.Classes} {
				*dst, _ = strconv.Atoi(saved.Metadata[k])
			}
			model, err := nn.NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := nn.LoadParamsFile(file, model.Params()); err != nil {
				t.Fatal(err)
			}
			old := filepath.Join(dir, tc.model+".old.safetensors")
			md := map[string]string{}
			for _, k := range []string{"model", "dataset", "split", "epoch", "seed"} {
				md[k] = saved.Metadata[k]
			}
			if err := nn.SaveParamsFile(old, model.Params(), md); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runGraft(t, "evaluate", "--json", "--model-file", old)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "does not record --normalize, --lcc, --row-normalize, --features, the split's seed; assuming") {
				t.Errorf("stderr does not name the assumed settings: %q", stderr)
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
				t.Fatal(err)
			}
			if ev["test_acc"] != sum["test_acc"] || ev["val_acc"] != sum["best_val_acc"] {
				t.Errorf("older file scores %v; the run reported test %v, val %v", ev, sum["test_acc"], sum["best_val_acc"])
			}
		})
	}
}

// TestEvaluateFromPartDir: a model trained from graft partition's stored
// parts is evaluated on the dataset the manifest names; the manifest does
// not record the split's seed, which evaluate says it assumed.
func TestEvaluateFromPartDir(t *testing.T) {
	parts := partDir(t, "")
	file, sum := trainSaved(t, t.TempDir(), "parts.safetensors", "--epochs", "6", "--part-dir", parts)
	code, stdout, stderr := runGraft(t, "evaluate", "--json", "--model-file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "does not record the split's seed; assuming the training seed") {
		t.Errorf("stderr does not name the assumed split seed: %q", stderr)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
		t.Fatal(err)
	}
	if ev["dataset"] != "cora" || ev["test_acc"] != sum["test_acc"] || ev["reproduces_run"] != true {
		t.Errorf("evaluate gave %v; the run reported test %v", ev, sum["test_acc"])
	}
}

// sameParams fails unless the model files a and b hold the same tensors,
// bit for bit (their metadata may differ).
func sameParams(t *testing.T, a, b string) {
	t.Helper()
	var files [2]*safetensors.File
	for i, path := range []string{a, b} {
		buf, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if files[i], err = safetensors.Parse(buf); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	x, y := files[0].Tensors, files[1].Tensors
	if len(x) != len(y) {
		t.Fatalf("%s has %d tensors, %s %d", a, len(x), b, len(y))
	}
	for i := range x {
		if x[i].Name != y[i].Name || !slices.Equal(x[i].Shape, y[i].Shape) || !bytes.Equal(x[i].Data, y[i].Data) {
			t.Errorf("tensor %d: %s %v in %s differs from %s %v in %s", i, x[i].Name, x[i].Shape, a, y[i].Name, y[i].Shape, b)
		}
	}
}

// Predictions on a graph whose nodes the source named name them so, and a
// .npy's rows are mapped to those names in a file beside it; the run's
// labels file is the model file's to reuse.
func TestPredictNamesRemappedNodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edges := write("e.txt", "alice bob\nbob carol\ncarol alice\ndave erin\nerin frank\nfrank dave\n")
	labels := write("l.csv", "alice,0\nbob,0\ncarol,0\ndave,1\nerin,1\nfrank,1\n")
	model := filepath.Join(dir, "m.safetensors")
	if code, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--split", "frac:0.5:0.25", "--epochs", "3", "--save", model); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	npy := filepath.Join(dir, "p.npy")
	if code, _, stderr := runGraft(t, "predict", "--model-file", model, "--out", npy); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	ids, err := os.ReadFile(filepath.Join(dir, "p.node_ids.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "row,node\n0,alice\n1,bob\n2,carol\n3,dave\n4,erin\n5,frank\n"; string(ids) != want {
		t.Errorf("node ids file %q, want %q", ids, want)
	}
	code, stdout, stderr := runGraft(t, "predict", "--model-file", model, "--split", "test")
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		name, _, _ := strings.Cut(line, ",")
		if !strings.Contains("alice bob carol dave erin frank", name) || name == "" {
			t.Errorf("a row names node %q", name)
		}
	}
}

// A run that evaluated on sampled neighbourhoods (--eval-sampler) is not
// expected to match the exact evaluation: evaluate says why, not that the
// data may differ.
func TestEvaluateExplainsASampledEvaluation(t *testing.T) {
	file, _ := trainSaved(t, t.TempDir(), "sampled.safetensors", "--epochs", "3", "--sampler", "neighbor:5,5", "--batch-size", "64",
		"--eval-sampler", "neighbor:2,2")
	code, stdout, stderr := runGraft(t, "evaluate", "--model-file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "same accuracies") { // these settings' sampled accuracies differ from the exact ones
		t.Fatalf("the sampled evaluation gave the exact accuracies; choose settings where they differ:\n%s", stdout)
	}
	if !strings.Contains(stdout, "--eval-sampler neighbor:2,2; this evaluation is exact") || strings.Contains(stdout, "other data") {
		t.Fatalf("evaluate of a model evaluated on samples says:\n%s", stdout)
	}
}

// A model trained on files named relative to the working directory is
// predicted on and evaluated from any other directory: the model file
// records where the run's dataset, labels, features and split file are.
// When one has moved since, the error names it and the flag that says
// where it is now.
func TestPredictFromAnotherDirectory(t *testing.T) {
	edges, _, features := twoCommunities(t)
	dir := filepath.Dir(edges)
	var split strings.Builder
	for i, set := range []string{"train", "train", "train", "val", "test"} {
		split.WriteString("a" + strconv.Itoa(i) + "," + set + "\nb" + strconv.Itoa(i) + "," + set + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "split.csv"), []byte(split.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	model := filepath.Join(dir, "m.safetensors")
	if code, _, stderr := runGraft(t, "train", "--dataset", "g.tsv", "--labels", "y.csv", "--features", "x.csv",
		"--split", "file:split.csv", "--epochs", "3", "--save", "m.safetensors"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	t.Chdir(t.TempDir())
	code, stdout, stderr := runGraft(t, "predict", "--model-file", model, "--split", "test")
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); code != 0 || len(lines) != 3 || lines[0] != "node,pred,p0,p1,class" {
		t.Fatalf("predict: exit %d, output %q: %s", code, stdout, stderr)
	}
	if code, stdout, stderr := runGraft(t, "evaluate", "--model-file", model); code != 0 || !strings.Contains(stdout, "the training run reported the same accuracies") {
		t.Fatalf("evaluate: exit %d: %s%s", code, stdout, stderr)
	}
	// The same dataset named another way still takes the run's node files.
	if code, _, stderr := runGraft(t, "predict", "--model-file", model, "--dataset", filepath.Join(dir, ".", "g.tsv")); code != 0 {
		t.Fatalf("predict --dataset: exit %d: %s", code, stderr)
	}
	if err := os.Rename(features, features+".old"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runGraft(t, "predict", "--model-file", model)
	if want := "the run read its features from " + features + ", which is not there (moved?); say where it is with --features PATH"; code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("predict with the features moved: exit %d, stderr %q; want %q", code, stderr, want)
	}
}

// Predictions name the classes as the training run's labels did: a model
// trained on labels "blue" and "red" predicts "blue" or "red" in the last
// column, class; numbered classes need no names and have no such column.
func TestPredictNamesClasses(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	dir := filepath.Dir(edges)
	model := filepath.Join(dir, "m.safetensors")
	if code, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features,
		"--split", "frac:0.5:0.25", "--epochs", "30", "--save", model); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runGraft(t, "predict", "--model-file", model)
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	header, rows := readCSV(t, stdout)
	if want := []string{"node", "pred", "p0", "p1", "class"}; !slices.Equal(header, want) || len(rows) != 20 {
		t.Fatalf("header %v and %d rows, want %v and 20", header, len(rows), want)
	}
	for _, r := range rows {
		if want := []string{"blue", "red"}[r[1][0]-'0']; r[4] != want { // classes in sorted order of their names
			t.Errorf("node %s: class %s named %q, want %q", r[0], r[1], r[4], want)
		}
	}
	numbered := filepath.Join(dir, "numbered.csv")
	if err := os.WriteFile(numbered, []byte(strings.NewReplacer("blue", "0", "red", "1").Replace(mustRead(t, labels))), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", numbered, "--features", features,
		"--split", "frac:0.5:0.25", "--epochs", "3", "--save", model); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runGraft(t, "predict", "--model-file", model); code != 0 || !strings.HasPrefix(stdout, "node,pred,p0,p1\n") {
		t.Fatalf("predict numbered classes: exit %d, output %.60q: %s", code, stdout, stderr)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
