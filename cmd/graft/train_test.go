package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
)

// runGraft runs one command line as main does, returning the exit code and
// what it printed.
func runGraft(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestTrainErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // substring of the one-line error
	}{
		{"unknown flag", []string{"train", "--no-such-flag"}, 2, "unknown flag --no-such-flag"},
		{"bad model", []string{"train", "--model", "mlp2"}, 2, "want gcn, sage or gat"},
		{"bad optimizer", []string{"train", "--optimizer", "rmsprop"}, 2, "want adam, adamw, amsgrad or sgd"},
		{"bad features", []string{"train", "--features", "packed"}, 2, "want auto, dense or sparse"},
		{"stray argument", []string{"train", "cora"}, 2, "all settings are flags"},
		{"missing dataset", []string{"train", "--dataset", "no-such-dataset"}, 1, "--data-dir"},
		{"named dataset without data dir", []string{"train", "--dataset", "citeseer"}, 1, "--data-dir"},
		{"split with an empty class", []string{"train", "--split", "frac:0.001:0.1"}, 1, `--split frac:0.001:0.1: class "Case_Based" has only 298 labelled nodes`},
		// The forms by name, not their table squashed into the line.
		{"unknown split", []string{"train", "--split", "bogus"}, 2, `--split bogus: unknown split "bogus" (want auto, public, public:K, geom-gcn:K, random:T:V, frac:T:V or file:PATH[:K])`},
		{"NaN loss", []string{"train", "--lr", "1e30", "--epochs", "20"}, 1, "lower the learning rate with --lr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runGraft(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			last, _ := lastError(stderr)
			if !strings.HasPrefix(last, "graft train: ") || !strings.Contains(last, tt.want) {
				t.Errorf("last stderr line %q, want \"graft train: …%s…\"", last, tt.want)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr shows a stack trace:\n%s", stderr)
			}
		})
	}
}

// A malformed form (a sampler's, a codec's, the schedule's, the gradient
// compression's, the link's or the split's) fails before the data loads,
// with the error the run gave once it had loaded them: a generated graph
// of a million nodes is not generated (no line about its split), and a
// dataset that does not exist is not reached.
func TestTrainFormsCheckedBeforeLoading(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--sampler", "saint-rw:100"}, "graft train: --sampler: sampler saint-rw:100: 1 fields; want ROOTS:LENGTH[:COVERAGE]"},
		{[]string{"--sampler", "neighbor:5"}, "graft train: --sampler: sampler neighbor:5: 1 fanouts for a model of 2 layers"},
		{[]string{"--sampler", "neighbor:5,5,5", "--layers", "3", "--eval-sampler", "fastgcn:10,10"}, "graft train: --eval-sampler: sampler fastgcn:10,10: 2 layer sizes for a model of 3 layers"},
		{[]string{"--sampler", "saint-rw:100", "--parts", "2"}, "graft train: --sampler with --parts 2: sampler saint-rw:100: 1 fields"},
		{[]string{"--sampler", "cluster:10", "--mode", "async", "--workers", "2"}, "graft train: --sampler: sampler cluster:10: want PARTS:PER_BATCH[:METHOD]"},
		{[]string{"--sampler", "neighbor:5,5", "--batch-size", "0"}, "graft train: --batch-size 0: want at least 1"},
		{[]string{"--parts", "2", "--grad-compress", "topk:2"}, `graft train: --grad-compress: gradient compression "topk:2": topk:FRACTION needs a fraction in (0, 1], not "2"`},
		{[]string{"--grad-compress", "topk:2"}, `graft train: --grad-compress: gradient compression "topk:2"`},
		{[]string{"--parts", "2", "--compress", "quant7"}, `graft train: --compress: unknown compressor "quant7"`},
		{[]string{"--parts", "2", "--schedule", "linear:2"}, "graft train: "},
		{[]string{"--parts", "2", "--eval-compress", "zip"}, `graft train: --eval-compress: unknown compressor "zip"`},
		{[]string{"--parts", "2", "--link", "fast"}, `graft train: --link: link "fast"`},
		{[]string{"--split", "random:x:y"}, `graft train: --split random:x:y: split "random:x:y": "x" and "y" are not both whole numbers`},
		{[]string{"--split", "frac:0.9:0.3"}, `graft train: --split frac:0.9:0.3: split "frac:0.9:0.3": fractions 0.9 and 0.3 out of range`},
		{[]string{"--split", "bogus"}, `graft train: --split bogus: unknown split "bogus"`},
	}
	for _, tt := range tests {
		for _, data := range []string{"sbm:1000000:20:16:4", filepath.Join(t.TempDir(), "absent.csv")} {
			args := append([]string{"train", "--dataset", data, "--epochs", "1"}, tt.args...)
			code, _, stderr := runGraft(t, args...)
			last, _ := lastError(stderr)
			if code != 2 || !strings.HasPrefix(last, tt.want) || strings.Contains(stderr, "graft train: split ") || strings.Contains(stderr, "loaded in") {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q before any line of loading", args[2:], code, stderr, tt.want)
			}
		}
	}
}

func TestTrainOutputs(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "metrics.jsonl")
	params := filepath.Join(dir, "model.safetensors")
	code, stdout, stderr := runGraft(t, "train", "--epochs", "12", "--json", "--metrics", metrics, "--save", params)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"dataset", "model", "epochs", "best_val_acc", "test_acc", "epoch_ms_median", "peak_rss_bytes"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q: %s", k, stdout)
		}
	}
	if sum["dataset"] != "cora" || sum["model"] != "gcn" || sum["epochs"] != 12.0 {
		t.Errorf("summary %s, want cora, gcn, 12 epochs", stdout)
	}
	// Not a terminal: plain progress lines, no carriage returns.
	if !strings.Contains(stderr, "epoch 12/12") || strings.Contains(stderr, "\r") {
		t.Errorf("progress on a non-terminal should be plain lines ending at epoch 12/12, got:\n%q", stderr)
	}

	f, err := os.Open(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("metrics line %d: %v", lines+1, err)
		}
		for _, k := range []string{"epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_seconds",
			"bytes_fwd", "bytes_bwd", "ratio", "compute_seconds", "comm_seconds", "emulated_seconds", "worker_compute_seconds"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("metrics line %d lacks %q", lines+1, k)
			}
		}
		lines++
		if rec["epoch"] != any(float64(lines)) {
			t.Errorf("metrics line %d has epoch %v", lines, rec["epoch"])
		}
	}
	if lines != 12 {
		t.Errorf("%d metrics lines, want 12", lines)
	}

	model, err := nn.NewModel(nn.Config{Model: "gcn", InFeatures: 1433, Hidden: 16, Classes: 7})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := nn.LoadParamsFile(params, model.Params())
	if err != nil {
		t.Fatalf("saved parameters do not load into a 2-layer GCN: %v", err)
	}
	if meta["model"] != "gcn" || meta["dataset"] != "cora" {
		t.Errorf("metadata %v", meta)
	}
}

func TestTrainTextSummary(t *testing.T) {
	code, stdout, stderr := runGraft(t, "train", "--model", "sage", "--epochs", "3", "--features", "dense")
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"sage on cora", "dense features", "best val acc", "test acc", "time per epoch", "peak memory"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

// A partitioned run whose parts share no edge sends no halo bytes: the
// summary says so instead of calling the amount unknown.
func TestSummaryWithoutHaloTraffic(t *testing.T) {
	var out bytes.Buffer
	printSummary(&out, job.Summary{Model: "gcn", Dataset: "d", Parts: 2, Partition: "random", BytesGrad: 1 << 20,
		Compress: "none", Schedule: "fixed:1", PeakRSSBytes: 1 << 20})
	if s := out.String(); !strings.Contains(s, "no halo traffic, 1.0 MiB gradients") || strings.Contains(s, "unknown") {
		t.Fatalf("summary:\n%s", s)
	}
}

// With --eval-every, every mode's per-epoch records say which epochs were
// evaluated, and the progress lines print "not evaluated" for the others
// instead of the last evaluation's accuracies.
func TestTrainEvalEveryMarksEpochs(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	sampled := []string{"--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "64"}
	for name, args := range map[string][]string{
		"full-graph":    nil,
		"parts":         {"--parts", "2"},
		"sampled":       sampled,
		"sampled parts": append(slices.Clone(sampled), "--parts", "2"),
		"async":         append(slices.Clone(sampled), "--mode", "async", "--workers", "1"),
		"pipeline":      append(slices.Clone(sampled), "--mode", "pipeline", "--stages", "2"),
	} {
		t.Run(name, func(t *testing.T) {
			mpath := filepath.Join(t.TempDir(), "m.jsonl")
			code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "5", "--eval-every", "2", "--patience", "0", "--metrics", mpath}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			raw, err := os.ReadFile(mpath)
			if err != nil {
				t.Fatal(err)
			}
			epochs, err := metrics.ReadJSONLines(bytes.NewReader(raw))
			if err != nil || len(epochs) != 5 || strings.Count(string(raw), `"evaluated":false`) != 2 {
				t.Fatalf("%d records, %v:\n%s", len(epochs), err, raw)
			}
			for _, e := range epochs {
				if want := e.Epoch%2 == 0 || e.Epoch == 5; e.Evaluated != want {
					t.Errorf("epoch %d: evaluated %v, want %v", e.Epoch, e.Evaluated, want)
				}
			}
			for _, line := range strings.Split(stderr, "\n") {
				var epoch int
				if _, err := fmt.Sscanf(line, "epoch %d/5", &epoch); err != nil {
					continue
				}
				evaluated := epoch%2 == 0 || epoch == 5
				if strings.Contains(line, "not evaluated") == evaluated || strings.Contains(line, " val ") != evaluated {
					t.Errorf("epoch %d (evaluated %v): line %q", epoch, evaluated, line)
				}
			}
			if n := strings.Count(stderr, "not evaluated"); n != 2 {
				t.Errorf("%d lines of epochs not evaluated, want 2:\n%s", n, stderr)
			}
		})
	}
}
