//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childrenOf lists the processes whose parent is pid (Linux /proc).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to find the workers in")
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(p); ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// procStat returns a process's parent and state, or 0 and "" when it is
// gone.
func procStat(pid int) (ppid int, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[0]
}

// Workers do not outlive their launcher: SIGKILLed, it can pass nothing
// on, yet its workers stop as on SIGTERM (after the same epoch, rank 0
// checkpointing) instead of training on.
func TestWorkersStopWhenTheLauncherDies(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	metrics, ckpt := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "ckpt")
	cmd := exec.Command(exe, "launch", "--nproc", "2", "--", "train", "--epochs", "100000", "--patience", "0",
		"--start-timeout", "30s", "--metrics", metrics, "--checkpoint-dir", ckpt, "--checkpoint-every", "0")
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitEpoch(t, metrics, 3, 60*time.Second)
	workers := childrenOf(t, cmd.Process.Pid)
	t.Cleanup(func() {
		for _, p := range workers {
			if _, state := procStat(p); state != "" && state != "Z" {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
	if len(workers) != 2 {
		t.Fatalf("launcher %d has children %v, want 2 workers", cmd.Process.Pid, workers)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for _, p := range workers {
		for {
			if _, state := procStat(p); state == "" || state == "Z" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker %d still runs 15 s after its launcher was killed", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if entries, _ := os.ReadDir(ckpt); len(entries) == 0 {
		t.Error("rank 0 wrote no checkpoint when it stopped")
	}
}
