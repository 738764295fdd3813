package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchTrainQuick(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	code, stdout, stderr := runGraft(t, "bench", "train", "--quick", "--nodes", "3000", "--json")
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var runs []string
	for _, line := range lines {
		var r struct {
			Graph        string  `json:"graph"`
			Model        string  `json:"model"`
			EpochMs      float64 `json:"epoch_ms"`
			PeakRSSBytes int64   `json:"peak_rss_bytes"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.EpochMs <= 0 {
			t.Errorf("%s %s: epoch_ms %v", r.Model, r.Graph, r.EpochMs)
		}
		runs = append(runs, r.Model+"/"+r.Graph)
	}
	want := "gcn/cora sage/cora gcn/sbm-3k sage/sbm-3k"
	if got := strings.Join(runs, " "); got != want {
		t.Errorf("runs %q, want %q", got, want)
	}
}

func TestBenchSampleQuick(t *testing.T) {
	code, stdout, stderr := runGraft(t, "bench", "sample", "--quick", "--json", "--sampler", "neighbor:5,5", "--batches", "3")
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct {
			Sampler        string  `json:"sampler"`
			Threads        int     `json:"threads"`
			EdgesPerSecond float64 `json:"edges_per_second"`
			SeedsPerSecond float64 `json:"seeds_per_second"`
			InputNodes     float64 `json:"input_nodes"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.Sampler != "neighbor:5,5" || r.Threads < 1 || r.EdgesPerSecond <= 0 || r.SeedsPerSecond <= 0 || r.InputNodes <= 0 {
			t.Errorf("result %+v", r)
		}
	}
	if code, _, stderr := runGraft(t, "bench", "sample", "--quick", "--sampler", "neighbor:0"); code != 1 || !strings.Contains(stderr, "fanout") {
		t.Errorf("a fanout of 0: exit %d, %s", code, stderr)
	}
}
