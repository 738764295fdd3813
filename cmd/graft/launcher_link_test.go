package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Without the parent-death signal (other systems) the launcher's pipe
// does it: a worker stops once the pipe's write end is closed, or when the
// heartbeats stop.
func TestWorkerStopsWhenTheLauncherPipeCloses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "train", "--epochs", "100000", "--patience", "0")
	cmd.Env = append(os.Environ(), "GRAFT_TEST_MAIN=1", launcherFDVar+"=3")
	cmd.ExtraFiles = []*os.File{r}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	time.Sleep(300 * time.Millisecond)
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// Stopped after an epoch, or at once if training had not begun.
		if err == nil || !strings.Contains(stderr.String(), "training interrupted") && !strings.Contains(stderr.String(), "stopped before training began") {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the worker still runs 15 s after the launcher's pipe closed")
	}
}

func TestWatchPipeSilence(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan struct{})
	go func() { watchPipe(r, 150*time.Millisecond); close(done) }()
	for range 5 { // heartbeats keep it waiting
		w.Write([]byte{1})
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("returned while heartbeats came")
	default:
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting long after the heartbeats stopped")
	}
}
