package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/job"
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
