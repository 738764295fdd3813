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

	"github.com/graft-gnn/graft/internal/datatest"
	"github.com/graft-gnn/graft/job"
)

// npyArray encodes one little-endian .npy array.
func npyArray(descr string, shape []int, data any) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s), }", descr, tuple)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	binary.Write(&b, binary.LittleEndian, data)
	return b.Bytes()
}

// fakeDataDir writes a data directory whose amazon-computers is a small
// graph in the gnn-benchmark layout: classes of 60 nodes, each node linked
// to the next of its class, with a noisy one-hot feature of its class.
func fakeDataDir(t *testing.T) string {
	t.Helper()
	const classes, per = 3, 60
	n := classes * per
	var indptr, indices []int32
	var data []float32
	attr := make([]float32, n*classes)
	labels := make([]int64, n)
	for v := range n {
		indptr = append(indptr, int32(len(indices)))
		c := v / per
		labels[v] = int64(c)
		attr[v*classes+c] = 1
		attr[v*classes+(c+v)%classes] = 1
		for _, u := range []int{v - 1, v + 1} {
			if u >= c*per && u < (c+1)*per {
				indices, data = append(indices, int32(u)), append(data, 1)
			}
		}
	}
	indptr = append(indptr, int32(len(indices)))
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	for _, a := range []struct {
		name, descr string
		shape       []int
		data        any
	}{
		{"adj_data", "<f4", []int{len(data)}, data},
		{"adj_indices", "<i4", []int{len(indices)}, indices},
		{"adj_indptr", "<i4", []int{len(indptr)}, indptr},
		{"adj_shape", "<i8", []int{2}, []int64{int64(n), int64(n)}},
		{"attr_matrix", "<f4", []int{n, classes}, attr},
		{"labels", "<i8", []int{n}, labels},
	} {
		w, err := zw.Create(a.name + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		w.Write(npyArray(a.descr, a.shape, a.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "gnn-benchmark"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gnn-benchmark", "amazon_electronics_computers.npz"), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func trainSummary(t *testing.T, args ...string) (job.Summary, string) {
	t.Helper()
	code, stdout, stderr := runGraft(t, append([]string{"train", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum job.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	return sum, stderr
}

// TestTrainRecipes: the recipe follows the dataset, fills every setting the
// command line leaves unset, and yields to every flag given.
func TestTrainRecipes(t *testing.T) {
	data := fakeDataDir(t)
	shchurGCN := job.Settings{LCC: true, RowNormalize: false, Layers: 2, Hidden: 64, Heads: 1, Dropout: 0.8, Optimizer: "adam",
		LR: 0.01, WeightDecay: 1e-3, DecayScope: "first-layer", MaxEpochs: 3, Patience: 50, Select: "loss"}
	shchurSAGE := job.Settings{LCC: true, RowNormalize: false, Layers: 2, Hidden: 32, Heads: 1, Dropout: 0.4, Optimizer: "adam",
		LR: 0.001, WeightDecay: 0.1, DecayScope: "first-layer", MaxEpochs: 3, Patience: 50, Select: "loss"}
	overridden := shchurGCN
	overridden.Hidden, overridden.LR, overridden.LCC, overridden.Select = 8, 0.05, false, "acc"
	planetoid := job.Settings{RowNormalize: true, Layers: 2, Hidden: 16, Heads: 1, Dropout: 0.5, Optimizer: "adam",
		LR: 0.01, WeightDecay: 5e-4, DecayScope: "first-layer", MaxEpochs: 3, Patience: 100, Select: "acc"}
	planetoidSAGE := planetoid
	planetoidSAGE.Hidden = 32
	tests := []struct {
		name       string
		args       []string
		recipe     string
		split      string
		settings   job.Settings
		recipeLine bool
	}{
		{"amazon-computers takes shchur", []string{"--dataset", "amazon-computers"}, "shchur", "random:20:30", shchurGCN, true},
		{"shchur for sage", []string{"--dataset", "amazon-computers", "--model", "sage"}, "shchur", "random:20:30", shchurSAGE, true},
		{"flags override the recipe", []string{"--dataset", "amazon-computers", "--hidden", "8", "--lr", "0.05", "--lcc=false", "--select", "acc", "--split", "random:10:10"},
			"shchur", "random:10:10", overridden, true},
		{"cora takes planetoid", []string{"--dataset", "cora"}, "planetoid", "public", planetoid, true},
		{"planetoid sage", []string{"--dataset", "cora", "--model", "sage"}, "planetoid", "public", planetoidSAGE, true},
		{"recipe none", []string{"--dataset", "amazon-computers", "--recipe", "none"}, "none", "frac:0.6:0.2", planetoid, false},
		{"recipe by name", []string{"--dataset", "cora", "--recipe", "shchur"}, "shchur", "random:20:30", shchurGCN, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, stderr := trainSummary(t, append([]string{"--data-dir", data, "--epochs", "3"}, tt.args...)...)
			if sum.Recipe != tt.recipe || sum.Split != tt.split {
				t.Errorf("recipe %q, split %q; want %q, %q", sum.Recipe, sum.Split, tt.recipe, tt.split)
			}
			if sum.Settings == nil || *sum.Settings != tt.settings {
				t.Errorf("settings\n%+v, want\n%+v", sum.Settings, tt.settings)
			}
			if got := strings.Contains(stderr, "graft train: recipe "+tt.recipe+" for "); got != tt.recipeLine {
				t.Errorf("stderr names the recipe: %v, want %v:\n%s", got, tt.recipeLine, stderr)
			}
			note, _, _ := strings.Cut(stderr, "\n")
			for _, a := range tt.args { // the note lists what the recipe sets, not the flags given
				if name, _, _ := strings.Cut(a, "="); strings.HasPrefix(name, "--") && (strings.Contains(note, name+" ") || strings.Contains(note, name+"=")) {
					t.Errorf("recipe note %q repeats the flag given %s", note, name)
				}
			}
		})
	}
}

// TestTrainHelpNamesTheRecipe: train -h lists every recipe and says which
// one the other flags select.
func TestTrainHelpNamesTheRecipe(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"train", "-h"}, "Recipe in force for --dataset cora --model gcn: planetoid (--recipe auto)"},
		{[]string{"train", "--dataset", "amazon-computers", "--model", "sage", "-h"}, "Recipe in force for --dataset amazon-computers --model sage: shchur (--recipe auto)\n  --split random:20:30 --lcc --row-normalize=false --features sparse --select loss --layers 2 --hidden 32"},
		{[]string{"train", "--dataset", "my.edges", "-h"}, "Recipe in force for --dataset my.edges --model gcn: none (--recipe auto)"},
	}
	for _, tt := range tests {
		code, help, _ := runGraft(t, tt.args...)
		if code != 0 || !strings.Contains(help, tt.want) {
			t.Errorf("%v: exit %d, help without %q:\n%s", tt.args, code, tt.want, help)
		}
		for _, r := range []string{"planetoid:", "shchur:", "none:"} {
			if !strings.Contains(help, r) {
				t.Errorf("%v: help does not describe recipe %s", tt.args, r)
			}
		}
	}
	if code, _, stderr := runGraft(t, "train", "--recipe", "kipf"); code != 2 || !strings.Contains(stderr, `--recipe: unknown recipe "kipf" (want auto, planetoid, shchur, none)`) {
		t.Errorf("--recipe kipf: exit %d, %s", code, stderr)
	}
}

// TestTrainAmazonComputersDefaults trains GCN on the real Amazon Computers
// with nothing but --dataset: the shchur recipe's accuracy (README: 83.5 ±
// 1.5 over 10 seeds).
func TestTrainAmazonComputersDefaults(t *testing.T) {
	datatest.Require(t, "gnn-benchmark/amazon_electronics_computers.npz")
	if testing.Short() {
		t.Skip("a full training run")
	}
	sum, _ := trainSummary(t, "--dataset", "amazon-computers")
	if sum.Recipe != "shchur" || sum.TestAcc < 0.80 {
		t.Errorf("recipe %s, test accuracy %.4f; want shchur and at least 0.80", sum.Recipe, sum.TestAcc)
	}
}
