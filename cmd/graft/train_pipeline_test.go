package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/graft-gnn/graft/metrics"
)

// pipelineArgs is a small sampled run of a 3-layer model.
var pipelineArgs = []string{"train", "--model", "sage", "--layers", "3", "--lr", "0.01", "--sampler", "neighbor:5,5,5", "--batch-size", "64", "--epochs", "3"}

func readEpochs(t *testing.T, path string) []metrics.Epoch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	epochs, err := metrics.ReadJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	return epochs
}

// graft train --mode pipeline trains what one process trains with
// --accumulate M over the same micro-batches: the same saved parameters,
// bit for bit, and the same losses and accuracies (the loss to float32
// rounding). The summary gives the stages, their layers and figures, and
// the bytes sent between them; the text summary says the same.
func TestTrainPipeline(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	for _, stages := range []int{2, 3} {
		base := filepath.Join(dir, strconv.Itoa(stages))
		code, _, stderr := runGraft(t, append(pipelineArgs, "--accumulate", "2", "--save", base+".acc.st", "--metrics", base+".acc.jsonl")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		code, stdout, stderr := runGraft(t, append(pipelineArgs, "--mode", "pipeline", "--stages", strconv.Itoa(stages), "--micro-batches", "2",
			"--save", base+".pipe.st", "--metrics", base+".pipe.jsonl", "--json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		sameFile(t, base+".acc.st", base+".pipe.st")
		want, got := readEpochs(t, base+".acc.jsonl"), readEpochs(t, base+".pipe.jsonl")
		if len(want) != 3 || len(got) != 3 {
			t.Fatalf("%d and %d epochs", len(want), len(got))
		}
		for i, w := range want {
			g := got[i]
			if math.Abs(g.Loss-w.Loss) > 1e-6*w.Loss || g.ValAcc != w.ValAcc || g.TestAcc != w.TestAcc || g.BytesFwd <= 0 || g.BytesBwd <= 0 || len(g.WorkerCompute) != stages {
				t.Fatalf("epoch %d: pipeline %+v, one process %+v", i+1, g, w)
			}
		}
		var sum struct {
			Mode         string    `json:"mode"`
			Stages       int       `json:"stages"`
			Micros       int       `json:"micro_batches"`
			Layers       []int     `json:"stage_layers"`
			Bubble       float64   `json:"bubble_fraction"`
			Compute      []float64 `json:"stage_compute_seconds"`
			Wait         []float64 `json:"stage_wait_seconds"`
			BytesFwd     int64     `json:"bytes_fwd"`
			BytesBwd     int64     `json:"bytes_bwd"`
			TrainSeconds float64   `json:"train_seconds"`
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatal(err)
		}
		layers := map[int]string{2: "[1,2]", 3: "[1,1,1]"}[stages]
		var fwd int64
		for _, e := range got {
			fwd += e.BytesFwd
		}
		if sum.Mode != "pipeline" || sum.Stages != stages || sum.Micros != 2 || jsonOf(sum.Layers) != layers ||
			sum.Bubble != float64(stages-1)/float64(2+stages-1) || len(sum.Compute) != stages || len(sum.Wait) != stages || sum.BytesFwd != fwd || sum.BytesBwd <= 0 || sum.TrainSeconds <= 0 {
			t.Fatalf("%d stages: summary %+v", stages, sum)
		}
		if stages == 3 {
			code, stdout, stderr = runGraft(t, append(pipelineArgs, "--mode", "pipeline", "--stages", "2", "--stage-layers", "2,1", "--epochs", "1")...)
			if code != 0 || !strings.Contains(stdout, "pipeline        2 stages of [2 1] layers, 4 micro-batches (bubble 0.20 at equal stages)") || !strings.Contains(stdout, "stages          compute ") {
				t.Fatalf("exit %d, text summary:\n%s%s", code, stdout, stderr)
			}
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestTrainPipelineErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	pipe := func(more ...string) []string {
		return append(append(append([]string{}, pipelineArgs...), "--mode", "pipeline"), more...)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no sampler", []string{"train", "--mode", "pipeline"}, "--mode pipeline trains on sampled mini-batches: add --sampler"},
		{"parts", pipe("--parts", "2"), "--mode pipeline gives every stage the whole graph: drop --parts"},
		{"too many stages", pipe("--stages", "4"), "--stages 4: a model of 3 layers splits into 1 to 3 stages"},
		{"stage layers", pipe("--stages", "2", "--stage-layers", "1,1"), "--stage-layers [1 1]: 2 layers for a model of 3"},
		{"empty stage", pipe("--stages", "3", "--stage-layers", "2,0,1"), "every stage holds at least one layer"},
		{"stage count", pipe("--stages", "3", "--stage-layers", "2,1"), "one count per stage, 3 of them"},
		{"stage layers syntax", pipe("--stage-layers", "1;2"), `--stage-layers "1;2": want layer counts`},
		{"micro-batches", pipe("--micro-batches", "0"), "--micro-batches 0: want at least 1"},
		{"accumulate", pipe("--accumulate", "2"), "its micro-batches are the accumulation (--micro-batches)"},
		{"checkpoints", pipe("--checkpoint-dir", "x"), "--mode pipeline does not checkpoint"},
		{"gradient compression", pipe("--grad-compress", "topk:0.01"), "drop --grad-compress, --compress"},
		{"halo compression", pipe("--compress-last"), "drop --grad-compress, --compress"},
		{"timeout", pipe("--stage-timeout", "0s"), "--stage-timeout 0s: want a positive duration"},
		{"async flag", pipe("--workers", "2"), "--workers: only with --mode async or ps-sync"},
		{"not pipeline", append(append([]string{}, pipelineArgs...), "--stages", "2"), "--stages: only with --mode pipeline"},
		{"mode", append(append([]string{}, pipelineArgs...), "--mode", "pipe"), `want sync, async, ps-sync or pipeline`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runGraft(t, tt.args...)
			last, _ := lastError(stderr)
			if code != 2 || !strings.HasPrefix(last, "graft train: ") || !strings.Contains(last, tt.want) {
				t.Errorf("exit %d, last stderr line %q; want exit 2 and %q", code, last, tt.want)
			}
		})
	}
}

// --precision bf16 in --mode pipeline trains what one process trains at
// bf16 with --accumulate M: the same saved parameters, bit for bit.
func TestTrainPipelineBF16(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	args := append(append([]string{}, pipelineArgs...), "--precision", "bf16", "--features", "dense")
	if code, _, stderr := runGraft(t, append(args, "--accumulate", "2", "--save", filepath.Join(dir, "acc.st"))...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runGraft(t, append(args, "--mode", "pipeline", "--stages", "2", "--micro-batches", "2", "--save", filepath.Join(dir, "pipe.st"), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct{ Precision string }
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Precision != "bf16" {
		t.Fatalf("summary precision %q (%v)", sum.Precision, err)
	}
	sameFile(t, filepath.Join(dir, "acc.st"), filepath.Join(dir, "pipe.st"))
}

// graft launch runs each stage as a process of its own, over TCP: the
// same saved parameters and epoch records as the stages in one process.
// A job of the wrong size is refused.
func TestTrainPipelineProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	args := append(append([]string{}, pipelineArgs...), "--mode", "pipeline", "--stages", "3", "--micro-batches", "2")
	if code, _, stderr := runGraft(t, append(args, "--save", filepath.Join(dir, "in.st"), "--metrics", filepath.Join(dir, "in.jsonl"))...); code != 0 {
		t.Fatalf("in-process: exit %d: %s", code, stderr)
	}
	launched := append([]string{"launch", "--nproc", "3", "--"}, args...)
	stdout, stderr, code, _ := graftProcess(t, append(launched, "--start-timeout", "30s", "--save", filepath.Join(dir, "mp.st"), "--metrics", filepath.Join(dir, "mp.jsonl"))...)
	if code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameFile(t, filepath.Join(dir, "in.st"), filepath.Join(dir, "mp.st"))
	w, g := epochLines(t, filepath.Join(dir, "in.jsonl")), epochLines(t, filepath.Join(dir, "mp.jsonl"))
	if len(w) != 3 || strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Fatalf("in-process epochs\n%s\nprocesses\n%s", strings.Join(w, "\n"), strings.Join(g, "\n"))
	}
	stdout, stderr, code, _ = graftProcess(t, append([]string{"launch", "--nproc", "2", "--"}, args...)...)
	if code == 0 || !strings.Contains(stdout+stderr, "--mode pipeline with --stages 3 needs 3 processes, one per stage; the job has 2") {
		t.Fatalf("a job of 2 processes for 3 stages: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// A stage process that is killed, or stops answering (SIGSTOP), makes the
// other stages exit non-zero within seconds, naming it, as a lost worker
// does.
func TestTrainPipelineLostStageIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
		t.Run(sig.String(), func(t *testing.T) {
			metrics := filepath.Join(t.TempDir(), "m.jsonl")
			cmds, errs := startWorkers(t, 3, "--model", "sage", "--layers", "3", "--sampler", "neighbor:5,5,5", "--batch-size", "32", "--epochs", "100000",
				"--mode", "pipeline", "--stages", "3", "--start-timeout", "30s", "--peer-timeout", "2s", "--metrics", metrics)
			waitEpoch(t, metrics, 2, 60*time.Second)
			cmds[1].Process.Signal(sig)
			lost := time.Now()
			for _, r := range []int{0, 2} {
				err := cmds[r].Wait()
				if took := time.Since(lost); took > 10*time.Second {
					t.Errorf("rank %d took %v to exit, want under 10 s", r, took)
				}
				last, _ := lastError(errs[r].String())
				t.Logf("rank %d: %s", r, last)
				if err == nil || !strings.Contains(errs[r].String(), "lost rank 1") {
					t.Errorf("rank %d (exit %v) does not name rank 1:\n%s", r, err, errs[r].String())
				}
			}
			if sig == syscall.SIGSTOP {
				cmds[1].Process.Signal(syscall.SIGCONT)
			}
		})
	}
}
