package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/job"
	"github.com/graft-gnn/graft/metrics"
)

// TestTrainPatienceWaitsForTheScheduleFloor runs README's partition-parallel
// example in small (Cora, 4 workers, the authors' linear:128:1.5:5) with a
// patience that, counted from the first epoch, ends the run at epoch 4 with
// the ratio near 100: the run must go on past the schedule's floor, and keep
// an epoch trained at it.
func TestTrainPatienceWaitsForTheScheduleFloor(t *testing.T) {
	const epochs = 100
	mf := filepath.Join(t.TempDir(), "m.jsonl")
	code, stdout, stderr := runGraft(t, "train", "--model", "sage", "--layers", "3", "--hidden", "64", "--lr", "0.05",
		"--parts", "4", "--compress", "truncate", "--schedule", "varco-paper", "--epochs", "100", "--patience", "2",
		"--metrics", mf, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum job.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	sched, err := compress.ParseSchedule("linear:128:1.5:5", epochs)
	if err != nil {
		t.Fatal(err)
	}
	step, ok := compress.FloorStep(sched, epochs)
	if !ok {
		t.Fatal("linear:128:1.5:5 never reaches its floor")
	}
	floor := step + 1 // epochs are 1-based, steps 0-based
	if sum.Schedule != "linear:128:1.5:5" || sum.FloorEpoch != floor {
		t.Errorf("schedule %q with floor epoch %d, want linear:128:1.5:5 and %d", sum.Schedule, sum.FloorEpoch, floor)
	}
	if sum.Epochs < floor+2 || sum.BestEpoch < floor {
		t.Errorf("ran %d epochs and kept epoch %d; the schedule reaches its floor at epoch %d", sum.Epochs, sum.BestEpoch, floor)
	}
	f, err := os.Open(mf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e metrics.Epoch
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Epoch == sum.BestEpoch && e.Ratio != 1.5 {
			t.Errorf("kept epoch %d was trained at ratio %v, not the floor 1.5", e.Epoch, e.Ratio)
		}
		if e.Epoch == floor-1 && e.Ratio <= 1.5 {
			t.Errorf("epoch %d already at ratio %v: the floor epoch is off by one", e.Epoch, e.Ratio)
		}
	}
}

// TestTrainDefaultSchedules: --compress without --schedule takes the
// codec's documented default (one that matched full communication's
// accuracy in docs/varco.md; subspace's on Amazon Computers, not on the
// synthetic graph), and the authors' setting has a name.
func TestTrainDefaultSchedules(t *testing.T) {
	tests := []struct{ codec, schedule, want string }{
		{"truncate", "", "exp:128:1:5"},
		{"topk", "", "exp:128:1:5"},
		{"subspace", "", "linear:4:1:5"},
		{"quant4", "", "fixed:1"},
		{"bf16", "", "fixed:1"},
		{"none", "", "fixed:1"},
		{"truncate", "varco-paper", "linear:128:1.5:5"},
	}
	for _, tt := range tests {
		t.Run(tt.codec+"/"+tt.schedule, func(t *testing.T) {
			if got := compress.DefaultSchedule(tt.codec); tt.schedule == "" && got != tt.want {
				t.Errorf("compress.DefaultSchedule(%q) = %q, want %q", tt.codec, got, tt.want)
			}
			args := []string{"train", "--parts", "2", "--compress", tt.codec, "--epochs", "2", "--json"}
			if tt.schedule != "" {
				args = append(args, "--schedule", tt.schedule)
			}
			code, stdout, stderr := runGraft(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var sum job.Summary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Schedule != tt.want || sum.Compress != tt.codec {
				t.Errorf("ran %s under %s, want %s under %s", sum.Compress, sum.Schedule, tt.codec, tt.want)
			}
		})
	}
}
