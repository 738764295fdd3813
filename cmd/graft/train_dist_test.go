package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestTrainPartitionedJSON(t *testing.T) {
	code, stdout, stderr := runGraft(t, "train", "--parts", "3", "--partition", "multilevel", "--compress", "truncate",
		"--schedule", "linear:16:1:2", "--link", "1gbit:1ms", "--epochs", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if sum["parts"] != 3.0 || sum["compress"] != "truncate" || sum["partition"] != "multilevel" {
		t.Errorf("summary %v", sum)
	}
	for _, k := range []string{"bytes_total", "bytes_fwd", "bytes_bwd", "emulated_seconds", "worker_imbalance"} {
		if v, ok := sum[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, sum[k])
		}
	}
}

func TestTrainPartitionFromAssignmentFile(t *testing.T) {
	// Cora has 2708 nodes: alternate two parts.
	var b strings.Builder
	for v := range 2708 {
		b.WriteString([]string{"0\n", "1\n"}[v%2])
	}
	path := filepath.Join(t.TempDir(), "cora.part.2")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runGraft(t, "train", "--parts", "2", "--partition", path, "--epochs", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"parts":2`) {
		t.Errorf("summary %s", stdout)
	}
}

func TestTrainPartitionedErrors(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("0\n1\n"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--parts", "0"}, 2, "want at least 1"},
		{[]string{"--parts", "5000"}, 2, "only 2708 nodes"},
		{[]string{"--compress", "zip"}, 2, "want one of none, truncate"},
		{[]string{"--compress", "delta:3"}, 2, `bits "3": want 1, 2, 4, 8, 32 or r`},
		{[]string{"--compress", "delta:4:0:0:zip"}, 2, "gradient codec"},
		{[]string{"--compress", "truncate", "--schedule", "linear:1:2:5"}, 2, "floor"},
		{[]string{"--link", "fast"}, 2, "--link"},
		{[]string{"--parts", "2", "--partition", "no-such-file"}, 2, "neither a method"},
		{[]string{"--parts", "2", "--partition", short}, 1, "2 entries for 2708 nodes"},
	}
	for _, tt := range tests {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "2"}, tt.args...)...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != tt.code || !strings.Contains(lines[len(lines)-1], tt.want) {
			t.Errorf("%v: exit %d, last line %q; want exit %d and %q", tt.args, code, lines[len(lines)-1], tt.code, tt.want)
		}
	}
}

// Compression flags on a run of one worker do nothing; the run says so
// rather than train uncompressed in silence, and says nothing when they act.
func TestTrainNotesCompressionWithOneWorker(t *testing.T) {
	for _, tt := range []struct {
		args []string
		note bool
	}{
		{[]string{"--compress", "topk"}, true},
		{[]string{"--schedule", "fixed:4", "--link", "1gbit:1ms"}, true},
		{[]string{"--compress-last"}, true},
		{[]string{}, false},
		{[]string{"--parts", "2", "--compress", "topk"}, false},
	} {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "1"}, tt.args...)...)
		if got := strings.Contains(stderr, "no effect with one worker"); code != 0 || got != tt.note {
			t.Errorf("%v: exit %d, note %v; want exit 0 and note %v (stderr %q)", tt.args, code, got, tt.note, stderr)
		}
	}
}

// SIGTERM checkpoints the run, and --resume finishes it with the same result
// as a run that was never stopped.
func TestTrainSIGTERMCheckpointsAndResumeFinishes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"train", "--parts", "2", "--compress", "subspace", "--epochs", "150", "--patience", "0", "--json"}
	cmd := exec.Command(exe, append(args, "--checkpoint-dir", dir, "--checkpoint-every", "0")...)
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until training is under way (the first progress line), then stop it.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "epoch") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(stderr.String(), "--resume "+dir) {
		t.Fatalf("after SIGTERM: exit %d (%v), stderr:\n%s", code, err, stderr.String())
	}

	code, resumed, errOut := runGraft(t, append(args, "--resume", dir)...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	code, whole, errOut := runGraft(t, args...)
	if code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", code, errOut)
	}
	var a, b map[string]any
	json.Unmarshal([]byte(resumed), &a)
	json.Unmarshal([]byte(whole), &b)
	for _, k := range []string{"best_epoch", "best_val_acc", "test_acc", "train_acc", "epochs"} {
		if a[k] != b[k] {
			t.Errorf("%s: resumed %v, uninterrupted %v", k, a[k], b[k])
		}
	}
}

// syncBuffer is a strings.Builder that a child process's output copier and
// the test can use at the same time.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// --compress-last sends the last layer's rows through the codec too:
// fewer halo bytes than the same codec leaving it whole.
func TestTrainCompressLast(t *testing.T) {
	bytes := map[bool]float64{}
	for _, last := range []bool{false, true} {
		args := []string{"train", "--parts", "2", "--compress", "delta:2", "--epochs", "2", "--json"}
		if last {
			args = append(args, "--compress-last")
		}
		code, stdout, stderr := runGraft(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var sum map[string]any
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("%v in %q", err, stdout)
		}
		bytes[last], _ = sum["bytes_fwd"].(float64)
	}
	if !(bytes[true] > 0 && bytes[true] < bytes[false]) {
		t.Fatalf("forward halo bytes %v with --compress-last, %v without", bytes[true], bytes[false])
	}
}

// --compress auto is entropy-coded delta coding at 2 bits with
// --compress-last, and it
// is what a run over parts gets when it asks for compression without
// naming a codec; a sampled run is refused with the reason.
func TestTrainCompressAuto(t *testing.T) {
	explicit := trainJSON(t, "--parts", "2", "--compress", "entropy:delta:2:0:0", "--compress-last", "--epochs", "2")
	for _, args := range [][]string{
		{"--compress", "auto"},
		{"--compress-last"},
	} {
		sum := trainJSON(t, append([]string{"--parts", "2", "--epochs", "2"}, args...)...)
		if sum["compress"] != "entropy:delta:2:0:0" || sum["bytes_fwd"] != explicit["bytes_fwd"] || sum["test_acc"] != explicit["test_acc"] {
			t.Errorf("%v: compress %v, %v forward bytes, test accuracy %v; entropy:delta:2:0:0 --compress-last sends %v and reaches %v",
				args, sum["compress"], sum["bytes_fwd"], sum["test_acc"], explicit["bytes_fwd"], explicit["test_acc"])
		}
	}
	if sum := trainJSON(t, "--parts", "2", "--schedule", "exp:8:1:1", "--epochs", "2"); sum["compress"] != "entropy:delta:r:0:0" {
		t.Errorf("--schedule alone over parts: compress %v, want entropy:delta:r:0:0 (auto with the schedule's widths)", sum["compress"])
	}
	if sum := trainJSON(t, "--parts", "2", "--epochs", "2"); sum["compress"] != "none" {
		t.Errorf("no compression asked: compress %v, want none", sum["compress"])
	}
	code, _, stderr := runGraft(t, "train", "--parts", "2", "--sampler", "neighbor:5,5", "--compress", "auto", "--epochs", "1")
	if code == 0 || !strings.Contains(stderr, "full-graph") {
		t.Errorf("sampled --compress auto: exit %d, %q; want a refusal naming full-graph training", code, stderr)
	}
	for _, args := range [][]string{{"--compress", "auto"}, {"--compress-last"}} {
		code, _, stderr := runGraft(t, append([]string{"train", "--parts", "2", "--rebalance", "--epochs", "1"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--rebalance with --compress auto") {
			t.Errorf("--rebalance %v: exit %d, %q; want exit 2 refusing auto's per-pair state", args, code, stderr)
		}
	}
	if code, _, stderr := runGraft(t, "train", "--compress", "auto", "--epochs", "1"); code != 0 || !strings.Contains(stderr, "--compress auto has no effect") {
		t.Errorf("--compress auto with one worker: exit %d, %q; want the note naming auto", code, stderr)
	}
}

// Before training begins there is no epoch to finish: SIGTERM during
// GraphSAINT's pre-sampling (here of a normalisation that would take
// hours) stops the process at once, with the shell's status for SIGTERM;
// it used to wait for the end of an epoch that had not started. Its CPU
// profile is written all the same (it was left empty).
func TestTrainInterruptBeforeTrainingStopsAtOnce(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	cmd := exec.Command(exe, "train", "--sampler", "saint-node:20:1e9", "--epochs", "1", "--cpuprofile", profile)
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "recipe") { // the flags are read and the signals caught
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no recipe line in stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	exitsWithin(t, cmd, 10*time.Second, "SIGTERM before training began", &stderr)
	if code := cmd.ProcessState.ExitCode(); code != 143 || !strings.Contains(stderr.String(), "stopped before training began") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	checkCPUProfile(t, profile)
}

// The first SIGINT lets the epoch under way finish; a second stops the
// process at once, with the shell's status for SIGINT, rather than after an
// epoch that can take minutes. Its CPU profile is written all the same.
func TestTrainSecondInterruptStopsAtOnce(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// 2500 batches of 16 seeds with their whole 2-hop neighbourhoods: an
	// epoch of many seconds.
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	cmd := exec.Command(exe, "train", "--dataset", "sbm:400000:40:32:8", "--model", "sage", "--sampler", "neighbor:-1,-1",
		"--batch-size", "16", "--epochs", "3", "--cpuprofile", profile)
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string) {
		// Generous: the graph is generated and an epoch trained first,
		// which on a loaded machine (a test run beside others) takes
		// over a minute; only a failing run waits this long.
		deadline := time.Now().Add(180 * time.Second)
		for !strings.Contains(stderr.String(), what) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("no %q in stderr:\n%s", what, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("epoch 1/3") // training has begun: epoch 2 is under way
	cmd.Process.Signal(os.Interrupt)
	waitFor("interrupt again")
	cmd.Process.Signal(os.Interrupt) // with the first: the same request
	time.Sleep(secondSignalAfter + 200*time.Millisecond)
	if strings.Contains(stderr.String(), "stopped at once") {
		t.Fatalf("two signals together stopped the process at once:\n%s", stderr.String())
	}
	cmd.Process.Signal(os.Interrupt)
	exitsWithin(t, cmd, 10*time.Second, "the second interrupt", &stderr)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "stopped at once") || strings.Contains(stderr.String(), "epoch 2/") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	checkCPUProfile(t, profile)
}

// checkCPUProfile fails the test unless path holds a whole CPU profile as
// runtime/pprof writes it: a gzip stream that ends with its checksum,
// holding a protocol buffer whose fields run to its end and include the
// profile's sample types (field 1) and samples (field 2).
func checkCPUProfile(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("CPU profile %s (%d bytes): %v", path, len(raw), err)
	}
	pb, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("CPU profile %s (%d bytes): %v", path, len(raw), err)
	}
	varint := func() uint64 {
		var v uint64
		for shift := 0; len(pb) > 0 && shift < 64; shift += 7 {
			b := pb[0]
			pb = pb[1:]
			if v |= uint64(b&0x7f) << shift; b < 0x80 {
				return v
			}
		}
		t.Fatalf("CPU profile %s: a varint runs past the end", path)
		return 0
	}
	seen := map[uint64]bool{}
	for len(pb) > 0 {
		key := varint()
		var skip uint64
		switch key & 7 {
		case 0:
			varint()
		case 1:
			skip = 8
		case 2:
			skip = varint()
		case 5:
			skip = 4
		default:
			t.Fatalf("CPU profile %s: wire type %d of field %d", path, key&7, key>>3)
		}
		if skip > uint64(len(pb)) {
			t.Fatalf("CPU profile %s: field %d runs past the end", path, key>>3)
		}
		pb, seen[key>>3] = pb[skip:], true
	}
	if !seen[1] || !seen[2] {
		t.Fatalf("CPU profile %s: fields %v; want sample types (1) and samples (2)", path, seen)
	}
}

// exitsWithin waits for cmd to exit, killing it and failing the test if it
// is still running d later (after says after what).
func exitsWithin(t *testing.T, cmd *exec.Cmd, d time.Duration, after string, stderr *syncBuffer) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(d):
		cmd.Process.Kill()
		t.Fatalf("still running %v after %s:\n%s", d, after, stderr.String())
	}
}

// Flags that only act with another one (--batch-size and --accumulate with
// --sampler, --checkpoint-every with --checkpoint-dir, --resume-allow with
// --resume) are named on stderr when given without it, and not otherwise.
func TestTrainNotesFlagsWithoutEffect(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		note string // "" for none
	}{
		{[]string{"--batch-size", "64"}, "--batch-size 64 has no effect without --sampler"},
		{[]string{"--accumulate", "4"}, "--accumulate 4 has no effect without --sampler"},
		{[]string{"--checkpoint-every", "5"}, "--checkpoint-every 5 has no effect without --checkpoint-dir"},
		{[]string{"--resume-allow", "epochs"}, "--resume-allow epochs has no effect without --resume"},
		{[]string{"--sampler", "neighbor:5,5", "--batch-size", "64", "--accumulate", "2"}, ""},
		{[]string{"--checkpoint-dir", filepath.Join(dir, "ck"), "--checkpoint-every", "1"}, ""},
		{[]string{"--checkpoint-dir", filepath.Join(dir, "ck2")}, "--checkpoint-every 10 is more than the run's 1 epochs: it checkpoints only if interrupted"},
		{[]string{}, ""},
	} {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "1"}, tt.args...)...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tt.args, code, stderr)
			continue
		}
		if tt.note == "" && strings.Contains(stderr, "has no effect") || tt.note != "" && !strings.Contains(stderr, tt.note) {
			t.Errorf("%v: stderr %q; want note %q", tt.args, stderr, tt.note)
		}
	}
}
