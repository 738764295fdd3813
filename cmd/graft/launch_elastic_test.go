package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// graftProcessEnv is graftProcess with extra environment variables.
func graftProcessEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), "GRAFT_TEST_MAIN=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

var restartLine = regexp.MustCompile(`graft launch: rank 1 failed \(signal: killed\); restart 1 of 1, resuming from (\S+) \(after epoch (\d+)\)`)

// A worker that dies mid-run is restarted with its group from the newest
// checkpoint, and the job ends with the parameters of an undisturbed run,
// bit for bit, and its per-epoch record.
func TestLaunchRestartsFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	args := []string{"--epochs", "30", "--patience", "0", "--compress", "truncate", "--schedule", "linear:16:1:2"}
	if code, stdout, stderr := runGraft(t, append([]string{"train", "--parts", "3", "--save", filepath.Join(dir, "whole.st"), "--metrics", filepath.Join(dir, "whole.jsonl")}, args...)...); code != 0 {
		t.Fatalf("undisturbed: exit %d: %s %s", code, stdout, stderr)
	}
	launchArgs := append([]string{"launch", "--nproc", "3", "--max-restarts", "1", "--grace", "1s", "--", "train"}, args...)
	launchArgs = append(launchArgs, "--start-timeout", "30s", "--peer-timeout", "3s", "--checkpoint-dir", ckpt, "--checkpoint-every", "5",
		"--save", filepath.Join(dir, "restarted.st"), "--metrics", filepath.Join(dir, "restarted.jsonl"))
	stdout, stderr, code := graftProcessEnv(t, []string{failAtVar + "=1:12"}, launchArgs...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := restartLine.FindStringSubmatch(stderr)
	if m == nil || m[2] != "10" || filepath.Dir(m[1]) != ckpt {
		t.Fatalf("no restart from the checkpoint after epoch 10:\n%s", stderr)
	}
	if !strings.Contains(stderr, "[rank 1] graft train: "+failAtVar+"=1:12: killing this worker after epoch 12") ||
		!strings.Contains(stderr, "[rank 0] resuming run ") {
		t.Errorf("the failure or the resume is missing:\n%s", stderr)
	}
	sameFile(t, filepath.Join(dir, "whole.st"), filepath.Join(dir, "restarted.st"))
	// The metrics file reads as one run's: epochs 11 and 12, written
	// before the crash, are replaced by the resume's.
	sameEpochs(t, filepath.Join(dir, "whole.jsonl"), filepath.Join(dir, "restarted.jsonl"))
}

// A worker that fails every time is restarted K times, and the job then
// fails with its status; a usage error is not restarted at all.
func TestLaunchRestartsAreBounded(t *testing.T) {
	base := []string{"launch", "--nproc", "2", "--grace", "1s", "--max-restarts", "2", "--",
		"worker", "selftest", "--start-timeout", "20s", "--peer-timeout", "3s", "--exit-rank", "1", "--exit-code"}
	stdout, stderr, code := graftProcessEnv(t, nil, append(base, "7")...)
	if code != 7 {
		t.Fatalf("exit %d, want 7\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"restart 1 of 2, starting over", "restart 2 of 2, starting over", "after 2 restarts (--max-restarts 2)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stdout, "rank 0 of 2: ok"); n != 0 {
		t.Errorf("rank 0 passed %d times", n)
	}
	if n := strings.Count(stderr, "restart 3"); n != 0 {
		t.Errorf("restarted a third time:\n%s", stderr)
	}

	stdout, stderr, code = graftProcessEnv(t, nil, append(base, "2")...)
	if code != 2 || strings.Contains(stderr, "restart 1") || !strings.Contains(stderr, "not restarted, a usage error") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}

	// A worker killed by a signal is restarted too.
	killed := append(slices.Clone(base[:len(base)-1]), "--exit-signal", "KILL")
	killed[6] = "1" // --max-restarts 1
	stdout, stderr, code = graftProcessEnv(t, nil, killed...)
	if code != 128+9 || !strings.Contains(stderr, "rank 1 failed (signal: killed); restart 1 of 1, starting over") || !strings.Contains(stderr, "after 1 restart (--max-restarts 1)") {
		t.Fatalf("%v: exit %d\n%s\n%s", killed, code, stdout, stderr)
	}
}

func TestLaunchElasticFlags(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "sd.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-restarts", "-1", "--", "train"}, "--max-restarts -1: want 0 or more"},
		{[]string{"--metrics-sd", sd, "--", "worker", "selftest"}, "the command must be train"},
		{[]string{"--metrics-host", "0.0.0.0", "--", "train"}, "add --metrics-sd FILE"},
		{[]string{"--metrics-sd", filepath.Join(sd, "no", "such", "dir.json"), "--", "train"}, "--metrics-sd: "},
	} {
		stdout, stderr, code := graftProcessEnv(t, nil, append([]string{"launch", "--nproc", "2"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("%v: exit %d\n%s\n%s", tc.args, code, stdout, stderr)
		}
	}
}

// --metrics-sd lists every worker's own metrics endpoint, labelled with
// its rank and the job, while the job runs, and no target after it; a
// job stopped by SIGTERM is not restarted.
func TestLaunchMetricsServiceDiscovery(t *testing.T) {
	dir := t.TempDir()
	sd := filepath.Join(dir, "graft.json")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "launch", "--nproc", "3", "--metrics-sd", sd, "--max-restarts", "1", "--", "train", "--epochs", "100000", "--patience", "0", "--start-timeout", "30s")
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var groups []sdGroup
	deadline := time.Now().Add(60 * time.Second)
	for len(groups) < 3 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(sd)
		json.Unmarshal(b, &groups)
		time.Sleep(10 * time.Millisecond)
	}
	if len(groups) != 3 {
		t.Fatalf("service discovery file %s: %d groups\n%s", sd, len(groups), stderr.String())
	}
	job := groups[0].Labels["graft_job"]
	seen := map[string]bool{}
	for k, g := range groups {
		if len(g.Targets) != 1 || g.Labels["rank"] != string(rune('0'+k)) || g.Labels["graft_job"] != job || job == "" || seen[g.Targets[0]] {
			t.Fatalf("group %d: %+v", k, g)
		}
		seen[g.Targets[0]] = true
		if epoch := scrapeEpoch(t, g.Targets[0], deadline); epoch < 1 {
			t.Errorf("rank %d at %s serves graft_epoch %v", k, g.Targets[0], epoch)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// Stopping the launcher stops the job: no restart.
	if !strings.Contains(stderr.String(), "not restarted, interrupted") || strings.Contains(stderr.String(), "restart 1 of 1") {
		t.Errorf("the stopped job was restarted, or did not say why not:\n%s", stderr.String())
	}
	if b, err := os.ReadFile(sd); err != nil || strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("after the job: %q, %v", b, err)
	}
}

var epochSample = regexp.MustCompile(`(?m)^graft_epoch (\d+)$`)

// scrapeEpoch reads graft_epoch from a worker's endpoint once it is past
// the first epoch (0 if it never is before deadline).
func scrapeEpoch(t *testing.T, target string, deadline time.Time) int {
	t.Helper()
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + target + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := epochSample.FindSubmatch(b); m != nil && string(m[1]) != "0" {
				n := 0
				for _, c := range m[1] {
					n = 10*n + int(c-'0')
				}
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

// The launcher reads the workers' command for the checkpoint directory a
// restart resumes from and the metrics port each worker gets.
func TestLaunchReadsTheWorkersCommand(t *testing.T) {
	for _, tc := range []struct {
		command []string
		n       int
		dir     string
		addrs   string
	}{
		{[]string{"train", "--checkpoint-dir", "a"}, 2, "a", ""},
		{[]string{"train", "--resume", "b"}, 2, "b", ""},
		{[]string{"train", "--resume", "b", "--checkpoint-dir", "c"}, 2, "c", ""},
		{[]string{"train", "--metrics-addr", "127.0.0.1:9200"}, 3, "", "127.0.0.1:9200 127.0.0.1:9201 127.0.0.1:9202"},
		{[]string{"train", "--metrics-addr", ":9200"}, 2, "", ":9200 :9201"},
		{[]string{"train", "--metrics-addr", "127.0.0.1:9200"}, 1, "", ""},
		{[]string{"train", "--metrics-addr", "127.0.0.1:0"}, 2, "", ""},
		{[]string{"train", "--metrics-addr", "127.0.0.1:65535"}, 2, "", ""},
		{[]string{"worker", "selftest", "--metrics-addr", "127.0.0.1:9200"}, 2, "", ""},
	} {
		p := planRestarts(tc.command)
		addrs, err := p.metricsAddrs(nil, tc.n)
		if p.dir != tc.dir || err != nil || strings.Join(addrs, " ") != tc.addrs {
			t.Errorf("%v ×%d: dir %q, addrs %q, %v; want %q, %q", tc.command, tc.n, p.dir, addrs, err, tc.dir, tc.addrs)
		}
	}
}

// worker bench --op times only that collective (after memcpy), and
// --cpuprofile leaves one profile per rank.
func TestWorkerBenchOpAndProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu")
	stdout, stderr, code := graftProcessEnv(t, nil, "launch", "--nproc", "2", "--", "worker", "bench", "--mib", "1", "--reps", "2",
		"--op", "alltoall", "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `"op":"memcpy"`) || !strings.Contains(stdout, `"op":"alltoall"`) || strings.Contains(stdout, `"op":"allreduce"`) {
		t.Errorf("want memcpy and alltoall only:\n%s", stdout)
	}
	for _, r := range []string{"0", "1"} {
		if st, err := os.Stat(prof + "." + r); err != nil || st.Size() == 0 {
			t.Errorf("profile of rank %s: %v", r, err)
		}
	}
	if _, stderr, code := graftProcessEnv(t, nil, "worker", "bench", "--op", "broadcast"); code != 2 || !strings.Contains(stderr, "want allreduce or alltoall") {
		t.Errorf("--op broadcast: exit %d\n%s", code, stderr)
	}
}
