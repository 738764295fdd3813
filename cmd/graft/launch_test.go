package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for graft: graft launch starts
// os.Executable, which here is this binary, with GRAFT_TEST_MAIN set.
func TestMain(m *testing.M) {
	if os.Getenv("GRAFT_TEST_MAIN") == "1" {
		if len(os.Args) == 5 && os.Args[1] == "test-print" { // a worker that writes its arguments as they are
			fmt.Fprint(os.Stdout, os.Args[2])
			fmt.Fprint(os.Stderr, os.Args[3])
			code, _ := strconv.Atoi(os.Args[4])
			os.Exit(code)
		}
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// graftProcess runs the test binary as graft with args.
func graftProcess(t *testing.T, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	took = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code, took
}

// Three processes form the mesh and check every collective's result, over
// shared memory (processes on one host, by default) and over TCP when
// GRAFT_TRANSPORT asks for it.
func TestLaunchSelftest(t *testing.T) {
	for _, tc := range []struct{ env, link string }{{"", "shm"}, {"tcp", "tcp"}} {
		t.Run(tc.link, func(t *testing.T) {
			t.Setenv("GRAFT_TRANSPORT", tc.env)
			stdout, stderr, code, _ := graftProcess(t, "launch", "--nproc", "3", "--", "worker", "selftest", "--start-timeout", "20s")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for r := range 3 {
				want := fmt.Sprintf("[rank %d] rank %d of 3: ok over %s (", r, r, tc.link)
				if r == 0 { // rank 0's stdout passes unprefixed
					want = fmt.Sprintf("rank 0 of 3: ok over %s (", tc.link)
				}
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// A worker that exits, crashes or hangs makes the others fail with its rank
// named, well within 10 s, and launch exits with that worker's status.
func TestLaunchFailureStatusAndNamedRank(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		code  int
		limit time.Duration
	}{
		{"exit", []string{"--exit-code", "7"}, 7, 5 * time.Second},
		{"SIGKILL", []string{"--exit-signal", "KILL"}, 128 + 9, 5 * time.Second},
		// Stopped: only the missing heartbeats give it away (peer timeout
		// 3 s); launch then kills it after --grace and 2 s.
		{"SIGSTOP", []string{"--exit-signal", "STOP"}, 128 + 9, 10 * time.Second},
	}
	for _, tc := range cases {
		for _, transport := range []string{"auto", "tcp"} {
			if tc.name == "SIGSTOP" && transport == "tcp" {
				continue // the heartbeats of TCP and shared-memory links are one code
			}
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				t.Setenv("GRAFT_TRANSPORT", transport)
				args := append([]string{"launch", "--nproc", "3", "--grace", "1s", "--", "worker", "selftest",
					"--start-timeout", "20s", "--peer-timeout", "3s", "--exit-rank", "1"}, tc.args...)
				stdout, stderr, code, took := graftProcess(t, args...)
				if code != tc.code {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
				}
				for _, r := range []string{"0", "2"} {
					if !regexp.MustCompile(`\[rank ` + r + `\] graft worker: .*comm: rank 1: `).MatchString(stderr) {
						t.Errorf("rank %s did not name rank 1:\n%s", r, stderr)
					}
				}
				if !strings.Contains(stderr, "rank 1 failed first") {
					t.Errorf("launch did not blame rank 1:\n%s", stderr)
				}
				if took > tc.limit {
					t.Errorf("took %v, want under %v", took, tc.limit)
				}
			})
		}
	}
}

func TestLaunchUsage(t *testing.T) {
	_, stderr, code, _ := graftProcess(t, "launch", "--nproc", "2")
	if code != 2 || !strings.Contains(stderr, "missing the command") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// Rank 0's standard output is the job's result as it is: `graft launch ...
// -- train ... --json` prints one JSON summary that parses without any
// stripping (graft launch ... | jq .), while the other ranks' standard
// output and every rank's standard error keep their rank's prefix.
func TestLaunchRankZeroStdoutUnprefixed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv("GRAFT_TEST_MAIN", "1") // graft launch's workers are this binary
	t.Chdir(t.TempDir())
	code, stdout, stderr := runGraft(t, "launch", "--nproc", "2", "--", "train", "--parts", "2", "--epochs", "2",
		"--start-timeout", "30s", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var sum struct {
		Epochs int `json:"epochs"`
		Parts  int `json:"parts"`
	}
	var whole map[string]any
	if err := json.Unmarshal([]byte(stdout), &whole); err != nil {
		t.Fatalf("stdout is not one JSON value: %v\n%s", err, stdout)
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Epochs != 2 || sum.Parts != 2 {
		t.Fatalf("summary %+v (%v)\n%s", sum, err, stdout)
	}
	if !strings.Contains(stderr, "[rank 0] ") {
		t.Errorf("rank 0's stderr is not prefixed:\n%s", stderr)
	}

	// Every rank's stdout: rank 0's as it is, rank 1's prefixed.
	code, stdout, stderr = runGraft(t, "launch", "--nproc", "2", "--", "worker", "selftest", "--start-timeout", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"\nrank 0 of 2: ok over ", "\n[rank 1] rank 1 of 2: ok over "} {
		if !strings.Contains("\n"+stdout, want) {
			t.Errorf("stdout lacks a line starting %q:\n%s", want[1:], stdout)
		}
	}
	if strings.Contains(stdout, "[rank 0]") {
		t.Errorf("rank 0's stdout is prefixed:\n%s", stdout)
	}
}

// graft launch passes rank 0's standard output byte for byte, a last line
// without a newline included, after every other worker's lines; the
// prefixed lines of the others end with a newline, the last one too. A
// restart's workers start on a line of their own.
func TestLaunchKeepsRankZerosLastLineAsItIs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv("GRAFT_TEST_MAIN", "1") // graft launch's workers are this binary
	for _, tc := range []struct {
		code     string
		restarts string
		want     string
	}{{"0", "0", "one\ntwo"}, {"1", "1", "one\ntwo\none\ntwo"}} {
		code, stdout, stderr := runGraft(t, "launch", "--nproc", "2", "--grace", "1s", "--max-restarts", tc.restarts, "--",
			"test-print", "one\ntwo", "oops", tc.code)
		if strconv.Itoa(code) != tc.code {
			t.Fatalf("exit %d, want %s\nstdout:\n%q\nstderr:\n%q", code, tc.code, stdout, stderr)
		}
		var zero []string
		for _, line := range strings.SplitAfter(stdout, "\n") {
			if !strings.HasPrefix(line, "[rank 1] ") {
				zero = append(zero, line)
			}
		}
		if got := strings.Join(zero, ""); got != tc.want || !strings.HasSuffix(stdout, "\ntwo") {
			t.Errorf("rank 0's stdout came out as %q, and last in %q; want %q, last", got, stdout, tc.want)
		}
		for _, want := range []string{"[rank 1] one\n", "[rank 1] two\n"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%q", want, stdout)
			}
		}
		for _, want := range []string{"[rank 0] oops\n", "[rank 1] oops\n"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%q", want, stderr)
			}
		}
	}
}
