package dataset

import (
	"strings"
	"testing"
)

func TestSyntheticDatasets(t *testing.T) {
	d, err := Load("sbm:2000:10:16:4:7", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes() != 2000 || d.NumFeatures() != 16 || d.NumClasses != 4 || len(d.Labels) != 2000 {
		t.Fatalf("sbm: %d nodes, %d features, %d classes", d.NumNodes(), d.NumFeatures(), d.NumClasses)
	}
	if avg := float64(d.Graph.NumEdges()) / 2000; avg < 8 || avg > 11 {
		t.Fatalf("sbm: average degree %.1f, want about 10", avg)
	}
	s, err := d.Split("public", 1)
	if err != nil || len(s.Train) != 200 || len(s.Val) != 200 || len(s.Test) != 1600 {
		t.Fatalf("sbm public split: %d/%d/%d, %v", len(s.Train), len(s.Val), len(s.Test), err)
	}
	again, _ := Load("sbm:2000:10:16:4:7", "")
	if again.Graph.NumEdges() != d.Graph.NumEdges() || again.Dense.Data[5] != d.Dense.Data[5] {
		t.Fatal("the same spec generated a different graph")
	}
	r, err := Load("rmat:10:5000", "")
	if err != nil || r.NumNodes() != 1024 || r.Labels != nil {
		t.Fatalf("rmat: %v", err)
	}
	r, err = Load("rmat:10:5000:8:3:2", "")
	if err != nil || r.NumNodes() != 1024 || r.NumFeatures() != 8 || r.NumClasses != 3 || len(r.Labels) != 1024 {
		t.Fatalf("rmat with a task: %v", err)
	}
	if s, err := r.Split("public", 1); err != nil || len(s.Train) < 90 || len(s.Train) > 110 {
		t.Fatalf("rmat public split: %d training nodes, %v", len(s.Train), err)
	}
	plain, _ := Load("rmat:10:5000:2", "")
	if plain.Graph.NumEdges() != r.Graph.NumEdges() {
		t.Fatal("the labels and features changed the R-MAT graph of the same seed")
	}
	for _, bad := range []string{"sbm:10:2", "sbm:a:2:3:4", "sbm:10:2:3:1", "sbm:10:20:3:2", "rmat:40:10", "rmat:10", "sbm:-1:2:3:4", "rmat:10:5000:8:1", "rmat:10:5000:8:3:2:1"} {
		if _, err := Load(bad, ""); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// A generated graph that would not fit in memory is refused before it is
// generated; it crashed the runtime out of memory.
func TestGeneratedBeyondMemoryRefused(t *testing.T) {
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, bool) { return 1 << 30, true }
	for _, spec := range []string{"rmat:4:1000000000", "sbm:2000000000:5:4:3", "rmat:20:1000:65536:2", "sbm:10000000:2:100:3"} {
		_, err := Load(spec, "")
		if err == nil || !strings.Contains(err.Error(), "more than the 1.0 GiB of memory available") {
			t.Errorf("%s: %v; want a refusal naming the memory available", spec, err)
		}
	}
	if _, err := GenerateDir("sbm:2000000000:5:4:3", t.TempDir(), "fp32"); err == nil || !strings.Contains(err.Error(), "memory available") {
		t.Errorf("generate: %v; want a refusal naming the memory available", err)
	}
	if _, err := Load("sbm:1000:5:4:3", ""); err != nil {
		t.Error(err)
	}
}
