package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const generatedSpec = "sbm:4000:10:24:4:3"

// generate writes generatedSpec to a new directory with graft data
// generate and returns it.
func generate(t *testing.T, dtype string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sbm")
	code, stdout, stderr := runGraft(t, "data", "generate", generatedSpec, "--out", dir, "--features-dtype", dtype, "--json")
	if code != 0 {
		t.Fatalf("data generate: exit %d: %s", code, stderr)
	}
	var info generateInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatal(err)
	}
	bytes := map[string]int64{"fp32": 4, "bf16": 2}[dtype]
	if info.Nodes != 4000 || info.Features != 24 || info.FeatureBytes != 4000*24*bytes || len(info.Files) != 7 || info.Classes != 4 {
		t.Fatalf("data generate reported %+v", info)
	}
	return dir
}

// trainEpochs trains and returns the run's epoch records (times left out)
// and its summary's mapped-features part, if any.
func trainEpochs(t *testing.T, args ...string) ([]string, map[string]any) {
	t.Helper()
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	args = append([]string{"train", "--epochs", "3", "--patience", "0", "--metrics", metrics, "--json"}, args...)
	code, stdout, stderr := runGraft(t, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	var sum struct {
		Mapped map[string]any `json:"features_mapped"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	return epochLines(t, metrics, "input_nodes"), sum.Mapped
}

// A generated directory trains exactly as the spec generated in memory,
// its features read or mapped: mini-batch (SAGE, neighbour sampler) and
// full-graph (GCN) give the same losses and accuracies epoch by epoch.
func TestGeneratedDatasetTrainsAsInMemory(t *testing.T) {
	dir := generate(t, "fp32")
	for _, model := range [][]string{
		{"--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "64"},
		{"--model", "gcn"},
	} {
		want, mapped := trainEpochs(t, append([]string{"--dataset", generatedSpec}, model...)...)
		if mapped != nil || len(want) != 3 {
			t.Fatalf("in memory: %d epochs, mapped %v", len(want), mapped)
		}
		for _, mode := range []string{"--features-mmap=false", "--features-mmap"} {
			got, mapped := trainEpochs(t, append([]string{"--dataset", dir, mode}, model...)...)
			if (mapped != nil) != (mode == "--features-mmap") {
				t.Fatalf("%s %v: summary's features_mapped %v", model[1], mode, mapped)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s %s:\n%s\nin memory:\n%s", model[1], mode, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if mapped != nil && model[1] == "sage" {
				if mapped["touched_bytes"].(float64) <= 0 || mapped["dtype"] != "fp32" || mapped["bytes"].(float64) != 4000*24*4 {
					t.Fatalf("features_mapped %v", mapped)
				}
			}
		}
	}
}

// Mapped bf16 features train as the in-memory features held in bf16:
// mini-batch in one process, and full-graph in one process and over parts.
func TestGeneratedBF16MappedTrainsAsInMemoryBF16(t *testing.T) {
	dir := generate(t, "bf16")
	for _, model := range [][]string{
		{"--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "64", "--precision", "bf16"},
		{"--model", "gcn", "--precision", "bf16"},
		{"--model", "sage", "--parts", "2", "--precision", "bf16"},
	} {
		want, _ := trainEpochs(t, append([]string{"--dataset", generatedSpec}, model...)...)
		got, mapped := trainEpochs(t, append([]string{"--dataset", dir, "--features-mmap"}, model...)...)
		if mapped == nil || mapped["dtype"] != "bf16" {
			t.Fatalf("%v: features_mapped %v", model, mapped)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%v: mapped bf16:\n%s\nin memory at bf16:\n%s", model, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// What mapped features cannot serve without copying them whole, and bad
// files, are refused with one line saying why.
func TestMappedFeaturesErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	fp32, bf16 := generate(t, "fp32"), generate(t, "bf16")
	truncated := filepath.Join(t.TempDir(), "x.npy")
	b, err := os.ReadFile(filepath.Join(fp32, "features.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, b[:len(b)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	sampled := []string{"--model", "sage", "--sampler", "neighbor:5,5"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--dataset", bf16, "--features-mmap"}, "train with --precision bf16"},
		{append([]string{"train", "--dataset", bf16, "--features-mmap"}, sampled...), "train with --precision bf16"},
		{append([]string{"train", "--dataset", fp32, "--features-mmap", "--precision", "bf16"}, sampled...), "would copy the mapped float32 features"},
		{[]string{"train", "--dataset", fp32, "--features-mmap", "--row-normalize", "--features", "sparse"}, "--features sparse would copy"},
		{[]string{"train", "--dataset", "cora", "--features-mmap"}, "not a .npy file to map"},
		{[]string{"train", "--dataset", fp32, "--features", truncated, "--features-mmap"}, "truncated"},
		{[]string{"train", "--dataset", fp32, "--features", truncated, "--features-mmap=false"}, "truncated"},
		{[]string{"train", "--dataset", fp32, "--features-mmap=maybe"}, "want true, false or auto"},
		{[]string{"data", "generate", "cora", "--out", t.TempDir()}, "not a generated dataset's spec"},
		{[]string{"data", "generate", generatedSpec}, "needs --out DIR"},
		{[]string{"data", "generate", generatedSpec, "--out", t.TempDir(), "--features-dtype", "fp16"}, "want fp32 or bf16"},
	} {
		code, _, stderr := runGraft(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q; want an error with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
