package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/graft-gnn/graft/metrics"
)

// graft train --mode async trains with a parameter server: the summary
// names the mode and sums up the staleness, and every epoch's record
// carries its staleness, dropped gradients and update rate. The text
// summary says the same.
func TestTrainAsync(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	mpath := filepath.Join(dir, "m.jsonl")
	base := []string{"train", "--model", "sage", "--lr", "0.01", "--sampler", "neighbor:10,5", "--batch-size", "32", "--epochs", "4"}
	args := append(base, "--mode", "async", "--workers", "3", "--servers", "2", "--staleness-rule", "linear:0.5",
		"--max-staleness", "6", "--slow-worker", "2:2", "--metrics", mpath, "--json")
	code, stdout, stderr := runGraft(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Mode             string  `json:"mode"`
		Workers          int     `json:"workers"`
		Servers          int     `json:"servers"`
		Rule             string  `json:"staleness_rule"`
		MaxStaleness     *int    `json:"max_staleness"`
		StalenessMean    float64 `json:"staleness_mean"`
		StalenessMax     int     `json:"staleness_max"`
		UpdatesPerSecond float64 `json:"updates_per_second"`
		TrainSeconds     float64 `json:"train_seconds"`
		Epochs           int     `json:"epochs"`
		BestValAcc       float64 `json:"best_val_acc"`
		psBytes
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	sum.check(t, "async")
	if sum.Mode != "async" || sum.Workers != 3 || sum.Servers != 2 || sum.Rule != "linear:0.5" || sum.MaxStaleness == nil || *sum.MaxStaleness != 6 ||
		sum.UpdatesPerSecond <= 0 || sum.TrainSeconds <= 0 || sum.Epochs != 4 || sum.BestValAcc <= 0 || float64(sum.StalenessMax) < sum.StalenessMean {
		t.Fatalf("summary %+v", sum)
	}
	f, err := os.Open(mpath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	epochs, err := metrics.ReadJSONLines(f)
	// Worker 0 reports the epochs it sees complete: when it lags, not
	// every one, but always the last.
	if err != nil || len(epochs) == 0 || len(epochs) > 4 || epochs[len(epochs)-1].Epoch != 4 {
		t.Fatalf("%d records, %v", len(epochs), err)
	}
	var grad, params int64
	for _, e := range epochs {
		if (e.UpdatesPerSecond <= 0 && e.DroppedUpdates == 0) || e.StalenessP99 > e.StalenessMax || e.Batches < 1 || e.BytesGrad <= 0 || e.BytesParams <= 0 {
			t.Fatalf("epoch record %+v", e)
		}
		grad, params = grad+e.BytesGrad, params+e.BytesParams
	}
	if grad != sum.BytesGrad || params != sum.BytesParams {
		t.Fatalf("the epoch records add up to %d bytes of gradients and %d of parameters, the summary %d and %d", grad, params, sum.BytesGrad, sum.BytesParams)
	}
	code, stdout, stderr = runGraft(t, append(base, "--mode", "ps-sync", "--workers", "2")...)
	if code != 0 || !strings.Contains(stdout, "parameter server ps-sync: 2 workers, 1 servers") || !strings.Contains(stdout, "updates ") ||
		!strings.Contains(stdout, " gradients to the servers, ") || !strings.Contains(stdout, " parameters back") {
		t.Fatalf("exit %d, text summary:\n%s%s", code, stdout, stderr)
	}
}

// psBytes are a parameter-server run's bytes in graft train's summary.
type psBytes struct {
	Parameters  int64 `json:"parameters"`
	BytesTotal  int64 `json:"bytes_total"`
	BytesFwd    int64 `json:"bytes_fwd"`
	BytesBwd    int64 `json:"bytes_bwd"`
	BytesGrad   int64 `json:"bytes_grad"`
	BytesParams int64 `json:"bytes_params"`
	BytesOther  int64 `json:"bytes_structure"`
}

// check asserts that the run sent gradients and parameters, and nothing
// else.
func (b psBytes) check(t *testing.T, name string) {
	t.Helper()
	if b.BytesGrad <= 0 || b.BytesParams <= 0 || b.BytesFwd+b.BytesBwd+b.BytesOther != 0 || b.BytesTotal != b.BytesGrad+b.BytesParams {
		t.Fatalf("%s: bytes %+v", name, b)
	}
}

func TestTrainAsyncErrors(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	sampled := []string{"train", "--sampler", "neighbor:5", "--epochs", "1"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"mode", append(sampled, "--mode", "hogwild"), `--mode "hogwild": want sync, async, ps-sync or pipeline`},
		{"rule", append(sampled, "--mode", "async", "--staleness-rule", "sqrt"), "--staleness-rule: staleness rule \"sqrt\": want none, inverse, linear:C or drop"},
		{"rule constant", append(sampled, "--mode", "async", "--staleness-rule", "linear:-2"), "C must be a number ≥ 0"},
		{"bound", append(sampled, "--mode", "async", "--max-staleness", "-1"), "--max-staleness -1: want 0 (no bound) or more"},
		{"per update", append(sampled, "--mode", "async", "--grads-per-update", "0"), "--grads-per-update 0: want 1 or more"},
		{"ps-sync per update", append(sampled, "--mode", "ps-sync", "--grads-per-update", "4"), "--grads-per-update: only with --mode async (ps-sync applies one gradient from every worker as each update)"},
		{"sync per update", append(sampled, "--grads-per-update", "4"), "--grads-per-update: only with --mode async or ps-sync"},
		{"pipeline per update", append(sampled, "--mode", "pipeline", "--grads-per-update", "4"), "--grads-per-update: only with --mode async or ps-sync"},
		{"slow rank", append(sampled, "--mode", "async", "--slow-worker", "4:3"), `--slow-worker "4:3": want RANK:FACTOR with RANK in [0,4)`},
		{"slow factor", append(sampled, "--mode", "async", "--slow-worker", "1:x"), "want RANK:FACTOR"},
		{"workers", append(sampled, "--mode", "async", "--workers", "0"), "--workers 0 and --servers 1: want at least 1 each"},
		{"timeout", append(sampled, "--mode", "async", "--ps-timeout", "0s"), "--ps-timeout 0s: want a positive duration"},
		{"sync flags", append(sampled, "--servers", "2"), "--servers: only with --mode async or ps-sync"},
		{"ps-sync rule", append(sampled, "--mode", "ps-sync", "--staleness-rule", "inverse"), "only with --mode async"},
		{"no sampler", []string{"train", "--mode", "async"}, "--mode async trains on sampled mini-batches: add --sampler"},
		{"parts", append(sampled, "--mode", "async", "--parts", "2"), "gives every worker the whole graph: drop --parts"},
		{"grad compress", append(sampled, "--mode", "async", "--grad-compress", "quant8"), "--grad-compress quant8 with --mode async: the workers push their gradients to the parameter servers whole"},
		{"ps-sync grad compress", append(sampled, "--mode", "ps-sync", "--grad-compress", "topk:0.1"), "--grad-compress topk:0.1 with --mode ps-sync:"},
		{"compress", append(sampled, "--mode", "async", "--compress", "quant8"), "--compress quant8 with --mode async: every worker holds the whole graph"},
		{"compress auto", append(sampled, "--mode", "async", "--compress", "auto"), "--compress auto with --mode async:"},
		{"schedule", append(sampled, "--mode", "async", "--schedule", "fixed:4"), "--schedule fixed:4 with --mode async: it sets the ratio of --compress"},
		{"compress last", append(sampled, "--mode", "async", "--compress-last"), "--compress-last with --mode async:"},
		{"accumulate", append(sampled, "--mode", "async", "--accumulate", "2"), "--accumulate 2 with --mode async: every gradient a worker pushes to the servers is one batch's; --grads-per-update K"},
		{"ps-sync accumulate", append(sampled, "--mode", "ps-sync", "--accumulate", "2"), "--accumulate 2 with --mode ps-sync:"},
		// Refused before the data loads: a dataset that does not exist
		// is not reached.
		{"before loading", append(sampled, "--dataset", "no-such-dataset", "--mode", "async", "--grad-compress", "quant8"), "--grad-compress quant8 with --mode async"},
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

// With --mode async, a setting that acts only on the links of training
// over parts is noted as doing nothing in that mode, not in a run of one
// worker; and compression settings that do nothing need not be given to
// see that: the run with none of them reports the bytes it sends.
func TestTrainAsyncNotesLink(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	args := []string{"train", "--model", "sage", "--sampler", "neighbor:5,5", "--batch-size", "64", "--epochs", "1", "--mode", "async", "--workers", "2"}
	code, _, stderr := runGraft(t, append(args, "--link", "1gbit:1ms")...)
	if code != 0 || !strings.Contains(stderr, "graft train: --link 1gbit:1ms has no effect with --mode async:") || strings.Contains(stderr, "one worker") {
		t.Fatalf("exit %d, stderr %q; want the note naming --mode async", code, stderr)
	}
	code, _, stderr = runGraft(t, args...)
	if code != 0 || strings.Contains(stderr, "no effect") {
		t.Fatalf("exit %d, stderr %q; want no note", code, stderr)
	}
}

// graft launch runs each worker and server of --mode async as a process of
// its own; rank 0, worker 0, reports, with the bytes the server counted:
// pushes of 9 bytes and 4 a parameter value, replies of 25 and 4 a value,
// one reply to each worker's first pull and one to every push. With
// --mode ps-sync, whose steps do not depend on timing, the processes
// report the bytes one process does. A job of the wrong size is refused.
func TestTrainAsyncProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	args := []string{"train", "--model", "sage", "--lr", "0.01", "--sampler", "neighbor:10,5", "--batch-size", "32", "--epochs", "3",
		"--mode", "async", "--workers", "2", "--servers", "1", "--start-timeout", "30s", "--json"}
	stdout, stderr, code, _ := graftProcess(t, append([]string{"launch", "--nproc", "3", "--"}, args...)...)
	if code != 0 || !strings.Contains(stdout, `"mode":"async"`) || !strings.Contains(stdout, `"workers":2`) || !strings.Contains(stdout, `"epochs":3`) ||
		!strings.Contains(stdout, `"parts":1`) || !strings.Contains(stdout, `"staleness_max"`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	summary := func(name, stdout string) psBytes {
		t.Helper()
		var b psBytes
		line := lastLine(stdout)
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stdout)
		}
		b.check(t, name)
		if m := b.BytesGrad / (9 + 4*b.Parameters); b.BytesGrad != m*(9+4*b.Parameters) || b.BytesParams != (2+m)*(25+4*b.Parameters) {
			t.Fatalf("%s: %d bytes of gradients and %d of parameters for a model of %d values", name, b.BytesGrad, b.BytesParams, b.Parameters)
		}
		return b
	}
	summary("async processes", stdout)
	psSync := append(slices.Clone(args[:len(args)-9]), "--mode", "ps-sync", "--workers", "2", "--servers", "1", "--json")
	stdout, stderr, code, _ = graftProcess(t, append(append([]string{"launch", "--nproc", "3", "--"}, psSync...), "--start-timeout", "30s")...)
	if code != 0 {
		t.Fatalf("ps-sync: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	got := summary("ps-sync processes", stdout)
	code, stdout, stderr = runGraft(t, psSync...)
	if code != 0 {
		t.Fatalf("ps-sync in one process: exit %d\n%s", code, stderr)
	}
	if want := summary("ps-sync in one process", stdout); got != want {
		t.Fatalf("ps-sync: processes report bytes %+v, one process %+v", got, want)
	}
	stdout, stderr, code, _ = graftProcess(t, append([]string{"launch", "--nproc", "2", "--"}, args...)...)
	if code == 0 || !strings.Contains(stdout+stderr, "needs 3 processes, one per rank; the job has 2") {
		t.Fatalf("a job of 2 processes for 3 ranks: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// A server process that is killed, or stops answering (SIGSTOP: its
// connections stay open but fall silent), makes every worker exit non-zero
// within seconds, naming it, as a lost worker does.
func TestTrainAsyncLostServerIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
		t.Run(sig.String(), func(t *testing.T) {
			metrics := filepath.Join(t.TempDir(), "m.jsonl")
			cmds, errs := startWorkers(t, 3, "--model", "sage", "--sampler", "neighbor:10,5", "--batch-size", "32", "--epochs", "100000",
				"--mode", "async", "--workers", "2", "--servers", "1", "--start-timeout", "30s", "--peer-timeout", "2s", "--metrics", metrics)
			waitEpoch(t, metrics, 2, 60*time.Second)
			cmds[2].Process.Signal(sig)
			lost := time.Now()
			for r, c := range cmds[:2] {
				err := c.Wait()
				if took := time.Since(lost); took > 10*time.Second {
					t.Errorf("rank %d took %v to exit, want under 10 s", r, took)
				}
				last, _ := lastError(errs[r].String())
				t.Logf("rank %d: %s", r, last)
				if err == nil || !strings.Contains(errs[r].String(), "lost rank 2") {
					t.Errorf("rank %d (exit %v) does not name rank 2:\n%s", r, err, errs[r].String())
				}
			}
			if sig == syscall.SIGSTOP {
				cmds[2].Process.Signal(syscall.SIGCONT)
			}
		})
	}
}

// --precision bf16 with a parameter server: the workers gather bf16
// features as a one-process mini-batch run does. One worker of ps-sync
// trains that run's epochs (the same losses and accuracies) and not the
// float32 run's.
func TestTrainAsyncBF16(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	dir := t.TempDir()
	base := []string{"train", "--model", "sage", "--lr", "0.01", "--sampler", "neighbor:10,5", "--batch-size", "32", "--epochs", "3", "--features", "dense"}
	epochs := func(name string, args ...string) []metrics.Epoch {
		path := filepath.Join(dir, name+".jsonl")
		if code, _, stderr := runGraft(t, append(append(append([]string{}, base...), args...), "--metrics", path)...); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		return readEpochs(t, path)
	}
	want := epochs("one", "--precision", "bf16")
	fp32 := epochs("fp32")
	got := epochs("ps", "--mode", "ps-sync", "--workers", "1", "--precision", "bf16")
	if len(got) != len(want) {
		t.Fatalf("%d epochs, one process %d", len(got), len(want))
	}
	differs := false
	for i := range want {
		if math.Abs(got[i].Loss-want[i].Loss) > 1e-6*want[i].Loss || got[i].ValAcc != want[i].ValAcc {
			t.Fatalf("epoch %d: loss %v, val %v; one process at bf16 %v, %v", i+1, got[i].Loss, got[i].ValAcc, want[i].Loss, want[i].ValAcc)
		}
		differs = differs || got[i].Loss != fp32[i].Loss
	}
	if !differs {
		t.Fatal("the bf16 parameter-server run trained the float32 run's epochs")
	}
}

// A run whose servers never apply an update (fewer gradients than
// --grads-per-update) reports the initial model's accuracies; stderr now
// says so, and does not for a run that updates.
func TestTrainAsyncNoUpdateSaid(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	for _, tc := range []struct {
		perUpdate string
		said      bool
	}{{"1000", true}, {"2", false}} {
		code, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features, "--sampler", "neighbor:5,5",
			"--mode", "async", "--workers", "2", "--grads-per-update", tc.perUpdate, "--epochs", "2", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got := strings.Contains(stderr, "the servers applied no update"); got != tc.said {
			t.Errorf("--grads-per-update %s: stderr %q; want the no-update note %v", tc.perUpdate, stderr, tc.said)
		}
	}
	// The note counts gradients, not their shares: two servers' note
	// gives the count of one's (it gave twice as many).
	kept := func(servers string) string {
		_, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features, "--sampler", "neighbor:5,5",
			"--mode", "async", "--workers", "2", "--servers", servers, "--grads-per-update", "1000", "--epochs", "2", "--json")
		m := regexp.MustCompile(`no update: (\d+) gradients were kept`).FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("--servers %s: no note with a count in %q", servers, stderr)
		}
		return m[1]
	}
	if one, two := kept("1"), kept("2"); one != two {
		t.Errorf("the note counts %s gradients with one server and %s with two; want the same", one, two)
	}
}

// More asynchronous workers than training nodes is refused naming the
// flag and the count (it said "rank 0: sample: 2 training nodes for 4
// shares"), as a settings error like the other refusals of
// TestTrainAsyncErrors: exit 2, which graft launch does not restart.
func TestTrainAsyncMoreWorkersThanTrainingNodes(t *testing.T) {
	edges, labels, features := twoCommunities(t)
	p := writeFiles(t, map[string]string{"split.csv": "a0,train\nb0,train\na1,val\nb1,val\na2,test\nb2,test\n"})
	code, _, stderr := runGraft(t, "train", "--dataset", edges, "--labels", labels, "--features", features, "--split", "file:"+p["split.csv"],
		"--sampler", "neighbor:5,5", "--mode", "async", "--workers", "3", "--epochs", "1")
	last, _ := lastError(stderr)
	if code != 2 || !strings.HasPrefix(last, "graft train: ") || !strings.Contains(last, "--workers 3: the split has 2 training nodes") {
		t.Errorf("exit %d, last stderr line %q; want exit 2 and a refusal naming --workers and the 2 training nodes", code, last)
	}
}
