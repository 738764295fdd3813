package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for graft: graft launch starts
// os.Executable, which here is this binary, with GRAFT_TEST_MAIN set.
func TestMain(m *testing.M) {
	if os.Getenv("GRAFT_TEST_MAIN") == "1" {
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
				if want := fmt.Sprintf("[rank %d] rank %d of 3: ok over %s (", r, r, tc.link); !strings.Contains(stdout, want) {
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
