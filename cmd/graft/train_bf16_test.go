package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bf16Summary is what the full-graph bf16 tests read of a --json summary.
type bf16Summary struct {
	Precision string  `json:"precision"`
	TestAcc   float64 `json:"test_acc"`
	BytesFwd  int64   `json:"bytes_fwd"`
	BytesBwd  int64   `json:"bytes_bwd"`
	Memory    struct {
		Features int64 `json:"features_bytes"`
	} `json:"memory"`
}

// --precision bf16 trains full-graph without --sampler, in one process and
// over --parts 2: the summary names the precision, the memory account's
// features are half of fp32's (bf16, and at --parts 2 the parts' copies of
// their rows too), the forward halo bytes are half and the backward bytes
// (float32 gradients) the same, and the test accuracy is within 2 points
// of fp32's.
func TestTrainFullGraphBF16(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	for _, parts := range []string{"1", "2"} {
		runs := map[string]bf16Summary{}
		for _, prec := range []string{"fp32", "bf16"} {
			code, stdout, stderr := runGraft(t, "train", "--dataset", "sbm:3000:10:16:4:7", "--model", "gcn", "--epochs", "40", "--patience", "0",
				"--parts", parts, "--precision", prec, "--json")
			if code != 0 {
				t.Fatalf("--parts %s --precision %s: exit %d: %s", parts, prec, code, stderr)
			}
			var sum bf16Summary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Precision != prec {
				t.Fatalf("summary's precision %q, ran %s", sum.Precision, prec)
			}
			runs[prec] = sum
		}
		f32, b16 := runs["fp32"], runs["bf16"]
		t.Logf("--parts %s: test accuracy %.4f at bf16, %.4f at fp32; features %d and %d bytes; halo %d+%d and %d+%d bytes",
			parts, b16.TestAcc, f32.TestAcc, b16.Memory.Features, f32.Memory.Features, b16.BytesFwd, b16.BytesBwd, f32.BytesFwd, f32.BytesBwd)
		if want := int64(3000 * 16 * 4); parts == "1" && f32.Memory.Features != want || f32.Memory.Features == 0 || 2*b16.Memory.Features != f32.Memory.Features {
			t.Errorf("--parts %s: features take %d bytes at bf16, %d at fp32", parts, b16.Memory.Features, f32.Memory.Features)
		}
		if parts == "2" && (f32.BytesFwd == 0 || 2*b16.BytesFwd != f32.BytesFwd || b16.BytesBwd != f32.BytesBwd) {
			t.Errorf("halo bytes forward %d and backward %d at bf16, %d and %d at fp32", b16.BytesFwd, b16.BytesBwd, f32.BytesFwd, f32.BytesBwd)
		}
		if f32.TestAcc < 0.75 || math.Abs(b16.TestAcc-f32.TestAcc) > 0.02 {
			t.Errorf("--parts %s: test accuracy %.4f at bf16, %.4f at fp32", parts, b16.TestAcc, f32.TestAcc)
		}
	}
}

// bf16 training over processes trains exactly what it trains in one
// process over as many parts: graft launch's processes, in-process parts
// and parts read from --part-dir (whose float32 features each worker
// rounds itself) give the same epochs and parameters.
func TestTrainBF16ProcessesMatchInProcess(t *testing.T) {
	dir := t.TempDir()
	save := func(name string) string { return filepath.Join(dir, name) }
	args := []string{"train", "--epochs", "5", "--patience", "0", "--precision", "bf16", "--features", "dense"}
	if code, _, stderr := runGraft(t, append(args, "--parts", "2", "--metrics", save("in.jsonl"), "--save", save("in.st"))...); code != 0 {
		t.Fatalf("in-process: exit %d: %s", code, stderr)
	}
	stdout, stderr, code, _ := graftProcess(t, append(append([]string{"launch", "--nproc", "2", "--"}, args...),
		"--start-timeout", "30s", "--metrics", save("mp.jsonl"), "--save", save("mp.st"))...)
	if code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameEpochs(t, save("in.jsonl"), save("mp.jsonl"))
	sameFile(t, save("in.st"), save("mp.st"))
	if !strings.Contains(stdout, "precision bf16") {
		t.Errorf("the summary does not name bf16:\n%s", stdout)
	}

	// Parts of a graph with dense features (a part directory stores them
	// in float32).
	const sbm = "sbm:2000:10:16:4:7"
	parts := filepath.Join(dir, "parts") + "/"
	if code, _, stderr := runGraft(t, "partition", "--dataset", sbm, "--parts", "3", "--out", parts); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, stderr)
	}
	args = []string{"train", "--epochs", "5", "--patience", "0", "--precision", "bf16"}
	if code, _, stderr := runGraft(t, append(args, "--dataset", sbm, "--parts", "3", "--partition", filepath.Join(parts, "assignment.txt"),
		"--metrics", save("mem.jsonl"), "--save", save("mem.st"))...); code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, stderr)
	}
	stdout, stderr, code, _ = graftProcess(t, append(append([]string{"launch", "--nproc", "3", "--"}, args...),
		"--part-dir", parts, "--start-timeout", "30s", "--metrics", save("pd.jsonl"), "--save", save("pd.st"))...)
	if code != 0 {
		t.Fatalf("processes from --part-dir: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Three parts: the gradient's length is not a multiple of 3, so the
	// ring's chunks differ, and every byte is counted as the processes'
	// ring sends it.
	if w, g := epochLines(t, save("mem.jsonl")), epochLines(t, save("pd.jsonl")); len(w) != 5 || !slices.Equal(w, g) {
		t.Errorf("in memory:\n%s\nprocesses from --part-dir:\n%s", strings.Join(w, "\n"), strings.Join(g, "\n"))
	}
	sameParams(t, save("mem.st"), save("pd.st"))
}

// codec_seconds is the time spent in a codec: a run over parts without
// --compress reports 0 for every model at either precision (GAT's float32
// rows at bf16 go through the bf16 rounding, which is no codec), and a
// compressed run reports its codec's time.
func TestTrainCodecSecondsWithoutCodec(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	for _, model := range []string{"gcn", "sage", "gat"} {
		for _, prec := range []string{"fp32", "bf16"} {
			for _, codec := range []string{"", "quant8"} {
				args := []string{"train", "--dataset", "sbm:600:6:16:4:7", "--model", model, "--epochs", "3", "--patience", "0",
					"--parts", "2", "--precision", prec, "--json"}
				if codec != "" {
					args = append(args, "--compress", codec)
				}
				code, stdout, stderr := runGraft(t, args...)
				if code != 0 {
					t.Fatalf("%s %s --compress %q: exit %d: %s", model, prec, codec, code, stderr)
				}
				var sum struct {
					Codec float64 `json:"codec_seconds"`
				}
				if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
					t.Fatal(err)
				}
				if (codec == "") != (sum.Codec == 0) {
					t.Errorf("%s at %s, --compress %q: codec_seconds %v", model, prec, codec, sum.Codec)
				}
			}
		}
	}
}
