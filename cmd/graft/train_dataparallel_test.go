package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
)

// sampledEpochLines is epochLines with a sampled run's byte counters (the
// setup's too, in the first epoch) and input rows and block entries.
func sampledEpochLines(t *testing.T, path string) []string {
	return epochLines(t, path, "bytes_structure", "bytes_features", "bytes_grad", "bytes_setup", "input_nodes", "input_edges")
}

// Sampled training over parts: N processes on loopback train exactly what
// N goroutines train, the same per-epoch losses, accuracies and bytes, and
// bit-identical parameters.
func TestTrainSampledPartsProcessesMatchInProcess(t *testing.T) {
	for _, codec := range []string{"none", "truncate"} {
		t.Run(codec, func(t *testing.T) { sampledPartsProcessesMatch(t, "neighbor:5,5", codec) })
	}
}

// The same for Cluster-GCN, whose batches stay within each worker's part,
// and GraphSAINT's random walks, which cross into the other's: `graft
// train --sampler SPEC --parts 2` in one process and under `graft launch
// --nproc 2`.
func TestTrainSubgraphSamplersOverPartsProcessesMatchInProcess(t *testing.T) {
	for _, spec := range []string{"saint-rw:40:2", "cluster:8:2"} {
		t.Run(spec, func(t *testing.T) { sampledPartsProcessesMatch(t, spec, "none") })
	}
}

func sampledPartsProcessesMatch(t *testing.T, sampler, codec string, extra ...string) {
	dir := t.TempDir()
	const n = 2
	args := []string{"train", "--model", "sage", "--sampler", sampler, "--batch-size", "16", "--epochs", "3", "--patience", "0", "--accumulate", "2",
		"--compress", codec}
	args = append(args, extra...)
	if codec != "none" {
		args = append(args, "--schedule", "linear:8:1:2")
	}
	base := filepath.Join(dir, "dp")
	inArgs := append(append([]string{}, args...), "--parts", strconv.Itoa(n), "--metrics", base+".in.jsonl", "--save", base+".in.st")
	if code, _, stderr := runGraft(t, inArgs...); code != 0 {
		t.Fatalf("in-process: exit %d: %s", code, stderr)
	}
	launchArgs := append([]string{"launch", "--nproc", strconv.Itoa(n), "--"}, args...)
	launchArgs = append(launchArgs, "--start-timeout", "30s", "--metrics", base+".mp.jsonl", "--save", base+".mp.st")
	stdout, stderr, code, _ := graftProcess(t, launchArgs...)
	if code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	w, g := sampledEpochLines(t, base+".in.jsonl"), sampledEpochLines(t, base+".mp.jsonl")
	if len(w) != 3 || len(w) != len(g) {
		t.Fatalf("%d epochs in process, %d in processes", len(w), len(g))
	}
	for i := range w {
		if w[i] != g[i] {
			t.Errorf("in-process %s\nprocesses  %s", w[i], g[i])
		}
	}
	if codec != "none" && !strings.Contains(w[0], "ratio 8 ") {
		t.Errorf("the first epoch's feature rows were not compressed at ratio 8: %s", w[0])
	}
	sameFile(t, base+".in.st", base+".mp.st")
}

// --precision bf16 over parts: processes train what the in-process parts
// train, and dense feature rows travel in half the bytes (the ids asked
// stay 4 bytes each).
func TestTrainSampledPartsBF16(t *testing.T) {
	sampledPartsProcessesMatch(t, "neighbor:5,5", "none", "--precision", "bf16", "--features", "dense")
	featureBytes := func(precision, features string) float64 {
		sum, _ := sampledPartsRun(t, "--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "16", "--epochs", "2",
			"--parts", "2", "--features", features, "--precision", precision)
		if sum.Precision != precision {
			t.Fatalf("precision %q in the summary, want %q", sum.Precision, precision)
		}
		return sum.BytesFeatures
	}
	fp32, bf16 := featureBytes("fp32", "dense"), featureBytes("bf16", "dense")
	if r := bf16 / fp32; r < 0.5 || r > 0.51 {
		t.Fatalf("--features dense: bf16 sent %.0f feature bytes, fp32 %.0f: ratio %.4f, want just over 0.5", bf16, fp32, r)
	}
	// Cora's bag-of-words features stay sparse, exact at either precision
	// as in one process, and travel as their entries.
	sparse32, sparse16 := featureBytes("fp32", "auto"), featureBytes("bf16", "auto")
	if sparse16 != sparse32 || sparse32 > fp32/10 {
		t.Fatalf("--features auto: bf16 sent %.0f feature bytes, fp32 %.0f; dense rows %.0f", sparse16, sparse32, fp32)
	}
}

// The summary counts the bytes of the sampled structure, the features, the
// gradients and the one-off exchanges at the start apart, and they add up
// to the total. Every data-parallel run shares its setup records and the
// parts' node lists at the start, and FastGCN, LADIES and GraphSAINT their
// samplers' whole-graph figures besides; one process, or full-graph
// training over parts, shares nothing of the kind.
func TestTrainSampledPartsSummary(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	summary := func(args ...string) sampledSummary {
		t.Helper()
		args = append([]string{"train", "--model", "gcn", "--batch-size", "32", "--epochs", "2", "--json"}, args...)
		code, stdout, stderr := runGraft(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var sum sampledSummary
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatal(err)
		}
		if sum.BytesTotal != sum.BytesFwd+sum.BytesBwd+sum.BytesGrad+sum.BytesStructure+sum.BytesFeatures+sum.BytesSetup {
			t.Fatalf("%v: bytes_total is not the sum of the others: %s", args, stdout)
		}
		return sum
	}
	neighbor := summary("--sampler", "neighbor:5,5", "--parts", "3")
	if neighbor.Parts != 3 || neighbor.Sampler != "neighbor:5,5" || neighbor.BytesStructure <= 0 || neighbor.BytesFeatures <= 0 ||
		neighbor.BytesGrad <= 0 || neighbor.BytesSetup <= 0 || neighbor.TestAcc <= 0 {
		t.Fatalf("neighbor:5,5 over 3 parts: %+v", neighbor)
	}
	for _, sampler := range []string{"fastgcn:64,64", "ladies:64,64", "saint-rw:40:2"} {
		sum := summary("--sampler", sampler, "--parts", "3")
		if sum.BytesSetup <= neighbor.BytesSetup || sum.BytesGrad <= 0 {
			t.Errorf("%s over 3 parts: %d bytes at setup, the setup records and node lists alone %d", sampler, sum.BytesSetup, neighbor.BytesSetup)
		}
	}
	if one := summary("--sampler", "neighbor:5,5"); one.BytesSetup != 0 || one.BytesTotal != 0 {
		t.Errorf("one process: %+v", one)
	}
	if full := summary("--parts", "3"); full.BytesSetup != 0 || full.BytesFwd <= 0 {
		t.Errorf("full-graph training over parts: %+v", full)
	}
}

type sampledSummary struct {
	Parts          int
	Sampler        string
	BytesStructure int64   `json:"bytes_structure"`
	BytesFeatures  int64   `json:"bytes_features"`
	BytesSetup     int64   `json:"bytes_setup"`
	BytesGrad      int64   `json:"bytes_grad"`
	BytesTotal     int64   `json:"bytes_total"`
	BytesFwd       int64   `json:"bytes_fwd"`
	BytesBwd       int64   `json:"bytes_bwd"`
	TestAcc        float64 `json:"test_acc"`
}

// Sampled training from a part directory, where each worker reads its own
// part only: in one process and as processes under graft launch, with the
// same epochs and bit-identical parameters.
func TestTrainSampledPartDir(t *testing.T) {
	parts := partDir(t, "")
	dir := t.TempDir()
	args := []string{"train", "--part-dir", parts, "--sampler", "neighbor:5,5", "--batch-size", "16", "--epochs", "2", "--patience", "0"}
	in := filepath.Join(dir, "in")
	if code, _, stderr := runGraft(t, append(append([]string{}, args...), "--metrics", in+".jsonl", "--save", in+".st")...); code != 0 {
		t.Fatalf("in-process: exit %d: %s", code, stderr)
	}
	mp := filepath.Join(dir, "mp")
	launchArgs := append(append([]string{"launch", "--nproc", "2", "--"}, args...), "--start-timeout", "30s", "--metrics", mp+".jsonl", "--save", mp+".st")
	if stdout, stderr, code, _ := graftProcess(t, launchArgs...); code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	w, g := sampledEpochLines(t, in+".jsonl"), sampledEpochLines(t, mp+".jsonl")
	if len(w) != 2 || len(g) != 2 || w[0] != g[0] || w[1] != g[1] {
		t.Fatalf("in-process %v\nprocesses %v", w, g)
	}
	sameFile(t, in+".st", mp+".st")
}

// A codec over parts codes feature rows dense; with sparse features the
// run says what a row costs either way, and sends fewer feature bytes
// without the codec.
func TestTrainSampledPartsCompressSparseSays(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	featureBytes := func(codec string) (float64, string) {
		sum, stderr := sampledPartsRun(t, "--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "16", "--epochs", "1",
			"--parts", "2", "--compress", codec)
		return sum.BytesFeatures, stderr
	}
	coded, stderr := featureBytes("quant8")
	if !strings.Contains(stderr, "--compress quant8 codes feature rows dense, 5732 bytes a row before coding") {
		t.Errorf("stderr does not say the rows are coded dense:\n%s", stderr)
	}
	plain, stderr := featureBytes("none")
	if strings.Contains(stderr, "codes feature rows dense") || plain >= coded {
		t.Errorf("uncompressed sparse rows: %.0f bytes, quant8's dense ones %.0f; stderr:\n%s", plain, coded, stderr)
	}
}

// Sparse features dense enough over the whole graph (10% and up, as
// --features auto would hold dense) travel and train as dense rows over
// parts: the same feature bytes as --features dense.
func TestTrainSampledPartsDenseEnoughSparseFeatures(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	featureBytes := func(features string) float64 {
		sum, _ := sampledPartsRun(t, "--dataset", "sbm:2000:10:16:4:7", "--features", features, "--model", "sage",
			"--sampler", "neighbor:5,5", "--batch-size", "32", "--epochs", "1", "--parts", "2")
		if sum.Features != features {
			t.Fatalf("features %q in the summary, want %q", sum.Features, features)
		}
		return sum.BytesFeatures
	}
	if sparse, dense := featureBytes("sparse"), featureBytes("dense"); sparse != dense || dense <= 0 {
		t.Fatalf("dense-enough sparse features sent %.0f feature bytes, dense ones %.0f", sparse, dense)
	}
}

// Samplers whose batches stay within a worker's part send no feature
// rows: the run does not talk of coding them.
func TestTrainSampledPartsCompressLocalSamplerSaysNothing(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	code, _, stderr := runGraft(t, "train", "--model", "sage", "--sampler", "cluster:8:2", "--epochs", "1",
		"--parts", "2", "--compress", "quant8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "codes feature rows dense") {
		t.Errorf("a cluster run, which sends no feature rows, talks of coding them:\n%s", stderr)
	}
}

// featureSummary is what the feature-bytes tests read of a run's summary.
type featureSummary struct {
	Features      string  `json:"features"`
	Precision     string  `json:"precision"`
	BytesFeatures float64 `json:"bytes_features"`
}

// sampledPartsRun runs graft train with args and --json, and returns its
// summary and stderr.
func sampledPartsRun(t *testing.T, args ...string) (featureSummary, string) {
	t.Helper()
	code, stdout, stderr := runGraft(t, append(append([]string{"train"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var sum featureSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: summary %s (%v)", args, stdout, err)
	}
	return sum, stderr
}

// storedAs copies the part directory dir with its features stored dense
// (nn.ForceDense) or sparse (nn.ForceSparse), and returns the copy.
func storedAs(t *testing.T, dir string, storage nn.Storage) string {
	t.Helper()
	m, err := partstore.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "parts") + "/"
	files := map[string]string{}
	for i := range m.Parts {
		sp, err := m.ReadPart(dir, i)
		if err != nil {
			t.Fatal(err)
		}
		if x := sp.Features; storage == nn.ForceSparse && x.Dense != nil {
			sp.Features = nn.NewFeatures(x.Dense, nn.ForceSparse)
		} else if storage == nn.ForceDense && x.Sparse != nil {
			sp.Features = nn.DenseFeatures(x.Sparse.Dense())
		}
		sums, err := partstore.WritePart(partstore.Dir(out, i), sp)
		if err != nil {
			t.Fatal(err)
		}
		for name, sum := range sums {
			files[fmt.Sprintf("part-%d/%s", i, name)] = sum
		}
	}
	m.Files, m.Sparse = files, storage == nn.ForceSparse
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// From --part-dir, where each worker reads its own part only, the workers
// decide together whether sparse features travel as dense rows, as over
// the whole graph: the SBM graph's dense-enough features stored sparse
// send the feature bytes they send stored dense, in one process and under
// graft launch; Cora's (1.3% dense) stored sparse send fewer.
func TestTrainSampledPartDirDenseRowsAsOverTheWholeGraph(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	t.Setenv("GRAFT_TOKEN", "")
	args := []string{"--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "32", "--epochs", "1"}
	for _, tc := range []struct {
		dataset   string
		denseRows bool
	}{{"sbm:2000:10:16:4:7", true}, {"cora", false}} {
		t.Run(tc.dataset, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "parts") + "/"
			if code, _, stderr := runGraft(t, "partition", "--dataset", tc.dataset, "--parts", "2", "--out", dir); code != 0 {
				t.Fatalf("partition: exit %d: %s", code, stderr)
			}
			sparse, dense := storedAs(t, dir, nn.ForceSparse), storedAs(t, dir, nn.ForceDense)
			in, mp := filepath.Join(t.TempDir(), "in.jsonl"), filepath.Join(t.TempDir(), "mp.jsonl")
			featureBytes := func(parts string, extra ...string) float64 {
				sum, _ := sampledPartsRun(t, append(append([]string{"--part-dir", parts}, args...), extra...)...)
				return sum.BytesFeatures
			}
			s, d := featureBytes(sparse, "--metrics", in), featureBytes(dense)
			if (s == d) != tc.denseRows || s > d || s <= 0 {
				t.Fatalf("features stored sparse sent %.0f feature bytes, stored dense %.0f", s, d)
			}
			if !tc.denseRows {
				return
			}
			launch := append(append([]string{"launch", "--nproc", "2", "--", "train", "--part-dir", sparse}, args...), "--start-timeout", "30s", "--metrics", mp)
			if stdout, stderr, code, _ := graftProcess(t, launch...); code != 0 {
				t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if w, g := sampledEpochLines(t, in), sampledEpochLines(t, mp); len(w) != 1 || len(g) != 1 || w[0] != g[0] {
				t.Fatalf("from sparse parts, in one process %v\nas processes %v", w, g)
			}
		})
	}
}

// The memory account of a process that holds one part counts that part's
// features: a rank of a multi-process data-parallel job, which lets go of
// the rest of the graph, holds its half of an sbm:2000 graph's 16 dense
// float32 columns (the partition is even); one process reading both parts
// of a part directory holds them all, with their adjacencies.
func TestMemoryAccountCountsThePartsHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv("GRAFT_DATA", "")
	t.Setenv("GRAFT_TOKEN", "")
	const data, features = "sbm:2000:10:16:4:7", 2000 * 16 * 4
	type memory struct {
		Memory struct {
			Graph    int64 `json:"graph_bytes"`
			Features int64 `json:"features_bytes"`
		} `json:"memory"`
		Balance struct {
			Size struct {
				CV float64 `json:"cv"`
			} `json:"size"`
		} `json:"balance"`
	}
	summary := func(name, stdout string) memory {
		t.Helper()
		var m memory
		if i := strings.Index(stdout, "{"); i < 0 || json.Unmarshal([]byte(strings.TrimSpace(stdout[i:])), &m) != nil {
			t.Fatalf("%s: no summary in %q", name, stdout)
		}
		return m
	}
	args := []string{"train", "--dataset", data, "--features", "dense", "--model", "sage", "--parts", "2", "--sampler", "neighbor:5,5", "--batch-size", "64", "--epochs", "1", "--json"}
	stdout, stderr, code, _ := graftProcess(t, append([]string{"launch", "--nproc", "2", "--"}, append(args, "--start-timeout", "30s")...)...)
	if code != 0 {
		t.Fatalf("launch: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if m := summary("rank 0", stdout); m.Memory.Features != features/2 || m.Balance.Size.CV != 0 {
		t.Errorf("rank 0 of 2 holds %d bytes of features (parts' sizes' cv %v), want its half of %d", m.Memory.Features, m.Balance.Size.CV, features)
	}
	dir := filepath.Join(t.TempDir(), "parts") + "/"
	if code, _, stderr := runGraft(t, "partition", "--dataset", data, "--parts", "2", "--out", dir); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, stderr)
	}
	for _, sampled := range []bool{false, true} {
		a := []string{"train", "--part-dir", dir, "--model", "sage", "--epochs", "1", "--json"}
		if sampled {
			a = append(a, "--sampler", "neighbor:5,5", "--batch-size", "64")
		}
		code, stdout, stderr := runGraft(t, a...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", a, code, stderr)
		}
		if m := summary("part-dir", stdout); m.Memory.Features < features || m.Memory.Graph <= 0 {
			t.Errorf("%v: the two parts' features %d bytes and adjacencies %d; want at least %d and some", a, m.Memory.Features, m.Memory.Graph, features)
		}
	}
}

// The text summary's "sent" line names what --compress coded: the fetched
// feature rows of a data-parallel run, the halo of a partition-parallel one.
func TestTrainPartsSummaryNamesWhatWasCoded(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sampler", "neighbor:5,5", "--batch-size", "32", "--parts", "2"}, "(features none, "},
		{[]string{"--parts", "2"}, "(halo none, "},
	} {
		code, stdout, stderr := runGraft(t, append([]string{"train", "--model", "gcn", "--epochs", "2"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		if !strings.Contains(stdout, tc.want) {
			t.Errorf("%v: the summary lacks %q:\n%s", tc.args, tc.want, stdout)
		}
	}
}
