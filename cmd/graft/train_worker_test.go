package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// epochLines reads a --metrics file and keeps what must not depend on how
// the workers are run: everything but times. The run's byte counters are
// those of partition-parallel training unless others are named.
func epochLines(t *testing.T, path string, bytes ...string) []string {
	t.Helper()
	if len(bytes) == 0 {
		bytes = []string{"bytes_fwd", "bytes_bwd", "bytes_grad"}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		line := fmt.Sprintf("epoch %v loss %v train %v val %v test %v val_loss %v ratio %v",
			m["epoch"], m["loss"], m["train_acc"], m["val_acc"], m["test_acc"], m["val_loss"], m["ratio"])
		for _, k := range bytes {
			line += fmt.Sprintf(" %s %v", k, m[k])
		}
		out = append(out, line)
	}
	return out
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("reading %s, %s: %v %v", a, b, err1, err2)
	}
	if !bytes.Equal(x, y) {
		t.Errorf("%s and %s differ (%d and %d bytes)", a, b, len(x), len(y))
	}
}

func sameEpochs(t *testing.T, want, got string) {
	t.Helper()
	w, g := epochLines(t, want), epochLines(t, got)
	if len(w) == 0 || len(w) != len(g) {
		t.Fatalf("%d epochs in %s, %d in %s", len(w), want, len(g), got)
	}
	for i := range w {
		if w[i] != g[i] {
			t.Errorf("in-process %s\nprocesses  %s", w[i], g[i])
		}
	}
}

// N processes on loopback train exactly what N goroutines train: the same
// per-epoch losses, accuracies and bytes, and bit-identical parameters.
func TestTrainProcessesMatchInProcess(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{2, 4} {
		for _, codec := range []string{"none", "truncate"} {
			t.Run(fmt.Sprintf("%d/%s", n, codec), func(t *testing.T) {
				args := []string{"train", "--epochs", "6", "--patience", "0", "--compress", codec}
				if codec != "none" {
					args = append(args, "--schedule", "linear:16:1:2")
				}
				base := filepath.Join(dir, fmt.Sprintf("%d-%s", n, codec))
				inArgs := append(args, "--parts", strconv.Itoa(n), "--metrics", base+".in.jsonl", "--save", base+".in.st")
				if code, _, stderr := runGraft(t, inArgs...); code != 0 {
					t.Fatalf("in-process: exit %d: %s", code, stderr)
				}
				launchArgs := append([]string{"launch", "--nproc", strconv.Itoa(n), "--"}, args...)
				launchArgs = append(launchArgs, "--start-timeout", "30s", "--metrics", base+".mp.jsonl", "--save", base+".mp.st")
				stdout, stderr, code, _ := graftProcess(t, launchArgs...)
				if code != 0 {
					t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
				}
				// Only rank 0 reports.
				if !strings.Contains("\n"+stdout, "\nsaved") || strings.Contains(stdout, "[rank 1]") || strings.Contains(stderr, "[rank 1] epoch") {
					t.Errorf("output:\n%s\n%s", stdout, stderr)
				}
				sameEpochs(t, base+".in.jsonl", base+".mp.jsonl")
				sameFile(t, base+".in.st", base+".mp.st")
			})
		}
	}
}

func TestTrainWorkerPartsMustMatchWorld(t *testing.T) {
	stdout, stderr, code, _ := graftProcess(t, "launch", "--nproc", "2", "--", "train", "--parts", "3", "--epochs", "1")
	// Under graft launch the source is not named torchrun.
	if code == 0 || !strings.Contains(stderr, "--parts 3 contradicts the job's 2 workers (from RANK and WORLD_SIZE, as graft launch and torchrun set them)") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// workers starts n graft train processes of one job on loopback, as a
// launcher would, and returns them with their stderr.
func startWorkers(t *testing.T, n int, args ...string) ([]*exec.Cmd, []*syncBuffer) {
	t.Helper()
	perRank := make([][]string, n)
	for r := range perRank {
		perRank[r] = args
	}
	return startRanks(t, perRank)
}

// startRanks starts one graft train worker per element of args, with its
// arguments, as startWorkers does.
func startRanks(t *testing.T, args [][]string) ([]*exec.Cmd, []*syncBuffer) {
	t.Helper()
	n := len(args)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmds, errs := make([]*exec.Cmd, n), make([]*syncBuffer, n)
	for r := range n {
		cmd := exec.Command(exe, append([]string{"train"}, args[r]...)...)
		cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1", "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), "GRAFT_TOKEN=352139054aa06ee7d18fd3b7")
		errs[r] = &syncBuffer{}
		cmd.Stderr = errs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			if c.ProcessState == nil {
				c.Process.Kill()
				c.Wait()
			}
		}
	})
	return cmds, errs
}

// waitEpoch waits until the --metrics file at path has an epoch ≥ want.
func waitEpoch(t *testing.T, path string, want int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no epoch %d in %s after %v", want, path, limit)
}

var lostRank = regexp.MustCompile(`lost rank (\d+) after epoch (\d+), the last one completed: .*comm: rank (\d+): `)

// A SIGKILLed worker makes the others exit non-zero within 10 s, naming it
// and the last completed epoch; resuming from rank 0's checkpoint finishes
// with the parameters of an undisturbed run, bit for bit.
func TestTrainWorkerKilledThenResumed(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	args := []string{"--epochs", "150", "--patience", "0", "--compress", "truncate", "--schedule", "linear:16:1:2",
		"--start-timeout", "30s", "--peer-timeout", "3s", "--checkpoint-dir", ckpt, "--checkpoint-every", "5"}
	metrics := filepath.Join(dir, "killed.jsonl")
	cmds, errs := startWorkers(t, 3, append(args, "--metrics", metrics)...)
	waitEpoch(t, metrics, 12, 60*time.Second)
	cmds[1].Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	for r, c := range cmds {
		err := c.Wait()
		took := time.Since(killed)
		if r == 1 {
			continue
		}
		if err == nil {
			t.Fatalf("rank %d exited 0 after rank 1 was killed:\n%s", r, errs[r].String())
		}
		if took > 10*time.Second {
			t.Errorf("rank %d took %v to exit, want under 10 s", r, took)
		}
		m := lostRank.FindStringSubmatch(errs[r].String())
		if m == nil || m[1] != "1" || m[3] != "1" {
			t.Errorf("rank %d does not name rank 1 and the last epoch:\n%s", r, errs[r].String())
		}
	}

	code, stdout, stderr := runGraft(t, append([]string{"train", "--parts", "3", "--save", filepath.Join(dir, "whole.st")}, args[:8]...)...)
	if code != 0 {
		t.Fatalf("undisturbed: exit %d: %s %s", code, stdout, stderr)
	}
	launchArgs := append([]string{"launch", "--nproc", "3", "--", "train", "--resume", ckpt, "--save", filepath.Join(dir, "resumed.st")}, args...)
	stdout, stderr, code, _ = graftProcess(t, launchArgs...)
	if code != 0 || !strings.Contains(stderr, "[rank 0] resuming run ") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameFile(t, filepath.Join(dir, "whole.st"), filepath.Join(dir, "resumed.st"))
}

// SIGTERM to one worker stops all of them after the same epoch; rank 0
// checkpoints and the run resumes to the undisturbed result. The run
// delta-codes its halo rows, so the checkpoint must carry every worker's
// reconstructions, which the workers gather on rank 0 as it saves.
func TestTrainWorkerSIGTERMCheckpoints(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	args := []string{"--epochs", "120", "--patience", "0", "--compress", "delta:2:0.05:3", "--start-timeout", "30s"}
	metrics := filepath.Join(dir, "m.jsonl")
	cmds, errs := startWorkers(t, 2, append(args, "--metrics", metrics, "--checkpoint-dir", ckpt, "--checkpoint-every", "0")...)
	waitEpoch(t, metrics, 5, 60*time.Second)
	cmds[1].Process.Signal(syscall.SIGTERM)
	for r, c := range cmds {
		if err := c.Wait(); err == nil || !strings.Contains(errs[r].String(), "training interrupted") {
			t.Fatalf("rank %d: %v\n%s", r, err, errs[r].String())
		}
	}
	if !strings.Contains(errs[0].String(), "--resume "+ckpt) {
		t.Errorf("rank 0 does not say how to resume:\n%s", errs[0].String())
	}
	code, _, stderr := runGraft(t, append([]string{"train", "--parts", "2", "--save", filepath.Join(dir, "whole.st")}, args[:6]...)...)
	if code != 0 {
		t.Fatalf("undisturbed: exit %d: %s", code, stderr)
	}
	stdout, stderr, code, _ := graftProcess(t, append([]string{"launch", "--nproc", "2", "--", "train", "--resume", ckpt,
		"--save", filepath.Join(dir, "resumed.st")}, args...)...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameFile(t, filepath.Join(dir, "whole.st"), filepath.Join(dir, "resumed.st"))
}

// Parts written by graft partition --out DIR/ train exactly like the
// in-memory partition with the same assignment, in one process or many.
func TestTrainFromPartDir(t *testing.T) {
	dir := t.TempDir()
	parts := filepath.Join(dir, "parts") + "/"
	if code, _, stderr := runGraft(t, "partition", "--dataset", "cora", "--parts", "3", "--method", "multilevel",
		"--balance", "train", "--out", parts); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, stderr)
	}
	args := []string{"train", "--epochs", "5", "--compress", "truncate", "--schedule", "linear:8:1:2"}
	save := func(name string) string { return filepath.Join(dir, name) }
	if code, _, stderr := runGraft(t, append(args, "--parts", "3", "--partition", filepath.Join(parts, "assignment.txt"),
		"--metrics", save("mem.jsonl"), "--save", save("mem.st"))...); code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runGraft(t, append(args, "--part-dir", parts, "--metrics", save("dir.jsonl"), "--save", save("dir.st"))...); code != 0 {
		t.Fatalf("part dir: exit %d: %s", code, stderr)
	}
	stdout, stderr, code, _ := graftProcess(t, append(append([]string{"launch", "--nproc", "3", "--"}, args...),
		"--part-dir", parts, "--metrics", save("mp.jsonl"), "--save", save("mp.st"))...)
	if code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameEpochs(t, save("mem.jsonl"), save("dir.jsonl"))
	sameEpochs(t, save("mem.jsonl"), save("mp.jsonl"))
	// The files' metadata differ: a part directory records no source.
	sameParams(t, save("mem.st"), save("dir.st"))
	sameParams(t, save("mem.st"), save("mp.st"))

	// The data comes from the parts; a worker count that disagrees, or a
	// data flag, is refused.
	for _, bad := range [][]string{{"--parts", "2"}, {"--dataset", "citeseer"}} {
		code, _, stderr := runGraft(t, append(append(args, "--part-dir", parts), bad...)...)
		if code != 2 {
			t.Errorf("%v: exit %d: %s", bad, code, stderr)
		}
	}
}

// Every worker of a multi-process resume refuses a checkpoint trained with
// other settings (rank 0 checks it and tells the others why), and a new
// multi-process run refuses a directory of another run's checkpoints.
func TestTrainWorkersCheckTheResumedRun(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	args := []string{"launch", "--nproc", "2", "--", "train", "--epochs", "2", "--start-timeout", "30s", "--checkpoint-dir", ckpt, "--checkpoint-every", "1"}
	if stdout, stderr, code, _ := graftProcess(t, args...); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, tc := range []struct{ extra, want string }{
		{"--resume", "--seed 1 (now 2)"},
		{"", "another run"},
	} {
		a := append(args, "--seed", "2")
		if tc.extra != "" {
			a = append(a, tc.extra, ckpt)
		}
		stdout, stderr, code, _ := graftProcess(t, a...)
		if code == 0 || !strings.Contains(stderr, "[rank 1] graft train: rank 0: ") || strings.Count(stderr, tc.want) < 2 {
			t.Errorf("%s: exit %d\n%s\n%s", tc.want, code, stdout, stderr)
		}
	}
}

// An assignment with an empty part (gpmetis writes them) trains across
// processes as in one: the empty worker takes part in every exchange.
func TestTrainWorkersWithAnEmptyPart(t *testing.T) {
	dir := t.TempDir()
	assign := filepath.Join(dir, "assign.txt")
	var b strings.Builder
	for v := range 2708 { // Cora's nodes, in parts 0 and 1 of 3
		fmt.Fprintln(&b, v%2)
	}
	if err := os.WriteFile(assign, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--epochs", "3", "--partition", assign}
	if code, _, stderr := runGraft(t, append(args, "--parts", "3", "--save", filepath.Join(dir, "in.st"))...); code != 0 {
		t.Fatalf("in one process: exit %d: %s", code, stderr)
	}
	stdout, stderr, code, _ := graftProcess(t, append(append([]string{"launch", "--nproc", "3", "--"}, args...),
		"--start-timeout", "20s", "--save", filepath.Join(dir, "mp.st"))...)
	if code != 0 {
		t.Fatalf("processes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sameFile(t, filepath.Join(dir, "in.st"), filepath.Join(dir, "mp.st"))
}

// A worker that fails for a reason of its own (here rank 0's damaged part
// file) tells the others why before it closes, and they report that reason
// instead of having lost it.
func TestTrainWorkersReportAPeersOwnFailure(t *testing.T) {
	parts := partDir(t, "")
	topo := filepath.Join(parts, "part-0", "topology.bin")
	b, err := os.ReadFile(topo)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	os.WriteFile(topo, b, 0o644)
	_, stderr, code, _ := graftProcess(t, "launch", "--nproc", "2", "--", "train", "--epochs", "2", "--part-dir", parts, "--start-timeout", "20s")
	var rank1 string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "[rank 1] graft train: ") {
			rank1 = line
		}
	}
	if code == 0 || !strings.Contains(rank1, "rank 0 failed") || !strings.Contains(rank1, "aborted: stored part 0") || !strings.Contains(rank1, "topology.bin") || strings.Contains(rank1, "lost") {
		t.Fatalf("exit %d; rank 1 says %q\n%s", code, rank1, stderr)
	}
}

// Workers of one job started with different settings (here rank 1 with
// another learning rate and seed) refuse to train, each naming the rank
// and the settings, instead of training different models into one.
func TestTrainWorkersMustAgreeOnSettings(t *testing.T) {
	args := []string{"--epochs", "2", "--start-timeout", "30s"}
	cmds, errs := startRanks(t, [][]string{args, append(slices.Clone(args), "--lr", "0.02", "--seed", "3")})
	for r, cmd := range cmds {
		err := cmd.Wait()
		last := lastLine(errs[r].String())
		if err == nil || !strings.Contains(last, "rank 1 was started with other settings than rank 0: --lr 0.02 (rank 0: 0.01), --seed 3 (rank 0: 1)") {
			t.Errorf("rank %d: %v: %s", r, err, errs[r].String())
		}
	}
}
