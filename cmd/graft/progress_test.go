package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/graft-gnn/graft/metrics"
)

// An epoch that runs for heartbeatAfter without a line gets one saying how
// long it has run; epochs that finish sooner do not, and nothing is
// printed after finish.
func TestTrainProgressHeartbeat(t *testing.T) {
	defer func(d time.Duration) { heartbeatAfter = d }(heartbeatAfter)
	heartbeatAfter = 40 * time.Millisecond
	var out bytes.Buffer
	p := newTrainProgress(&out, 100, "test")
	p.begin(1)
	time.Sleep(150 * time.Millisecond)
	p.epoch(metrics.Epoch{Epoch: 1, Loss: 1, Evaluated: true})
	for e := 2; e <= 4; e++ { // quick epochs
		time.Sleep(5 * time.Millisecond)
		p.epoch(metrics.Epoch{Epoch: e, Loss: 1, Evaluated: true})
	}
	time.Sleep(150 * time.Millisecond)
	p.finish()
	got := out.String()
	first, second, line := strings.Index(got, "epoch 1: 0 s so far"), strings.Index(got, "epoch 5: 0 s so far"), strings.Index(got, "epoch   1/100")
	if first < 0 || line < first || second < line {
		t.Fatalf("want a heartbeat for the first epoch, its line, then one for the fifth:\n%s", got)
	}
	for _, e := range []string{"epoch 2:", "epoch 3:", "epoch 4:"} {
		if strings.Contains(got, e) {
			t.Errorf("a heartbeat for a quick epoch (%q):\n%s", e, got)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if out.String() != got {
		t.Errorf("printed after finish:\n%s", strings.TrimPrefix(out.String(), got))
	}
}

// graft train starts the heartbeat when training begins, on one part and
// on in-process parts.
func TestTrainReportsLongEpochs(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	defer func(d time.Duration) { heartbeatAfter = d }(heartbeatAfter)
	heartbeatAfter = 0 // every tick: any epoch is long
	// Ticks come every millisecond: the graph is large enough that an
	// epoch takes many of them, however fast the machine.
	graph := "sbm:30000:10:64:4"
	for _, parts := range []string{"1", "2"} {
		code, _, stderr := runGraft(t, "train", "--dataset", graph, "--epochs", "3", "--parts", parts)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr, "epoch 1: ") || !strings.Contains(stderr, " s so far") {
			t.Errorf("--parts %s: no heartbeat for epoch 1:\n%s", parts, stderr)
		}
	}
	// A resumed run's heartbeat names the epoch it resumes at.
	dir := t.TempDir()
	if code, _, stderr := runGraft(t, "train", "--dataset", graph, "--epochs", "3", "--checkpoint-dir", dir, "--checkpoint-every", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, _, stderr := runGraft(t, "train", "--dataset", graph, "--epochs", "5", "--resume", dir, "--resume-allow", "epochs")
	if code != 0 {
		t.Fatalf("resumed: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "epoch 4: ") || strings.Contains(stderr, "epoch 1: ") {
		t.Errorf("resumed after epoch 3: want a heartbeat for epoch 4 and none for epoch 1:\n%s", stderr)
	}
}

// The heartbeat counts the epoch under way from its start, says nothing
// more often than every heartbeatAfter, and after the run's last epoch
// (its final evaluation, saving) names no epoch past the run's.
func TestTrainProgressHeartbeatCounts(t *testing.T) {
	p := newTrainProgress(io.Discard, 3, "test")
	before := time.Now()
	p.epoch(metrics.Epoch{Epoch: 2, Loss: 1})
	if got, want := p.underWay(before.Add(90*time.Second)), "epoch 3: 90 s so far"; got != want {
		t.Errorf("after epoch 2 of 3: %q, want %q", got, want)
	}
	before = time.Now()
	p.epoch(metrics.Epoch{Epoch: 3, Loss: 1})
	if got := p.underWay(before.Add(45 * time.Second)); strings.Contains(got, "epoch 4") || !strings.Contains(got, "last epoch") || !strings.Contains(got, "45 s so far") {
		t.Errorf("after the last of 3 epochs: %q, want no epoch 4, the last epoch and 45 s", got)
	}

	defer func(d time.Duration) { heartbeatAfter = d }(heartbeatAfter)
	heartbeatAfter = 40 * time.Millisecond
	var out bytes.Buffer
	p = newTrainProgress(&out, 100, "test")
	start := time.Now()
	p.begin(7) // a resumed run's first epoch
	p.begin(7) // as every in-process worker does
	time.Sleep(200 * time.Millisecond)
	p.finish()
	took := time.Since(start)
	got := out.String()
	if n, most := strings.Count(got, "epoch 7:"), int(took/heartbeatAfter)+1; n == 0 || n > most {
		t.Errorf("%d heartbeats in %v, want 1 to %d:\n%s", n, took, most, got)
	}
	time.Sleep(100 * time.Millisecond)
	if out.String() != got {
		t.Errorf("printed after finish:\n%s", strings.TrimPrefix(out.String(), got))
	}
}
