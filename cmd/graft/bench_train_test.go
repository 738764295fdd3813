package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/sample"
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
	if code, stdout, stderr := runGraft(t, "bench", "sample", "--quick", "--sampler", "neighbor:0"); code != 2 || !strings.Contains(stderr, "fanout") || stdout != "" {
		t.Errorf("a fanout of 0: exit %d, %s%s", code, stdout, stderr)
	}
}

// bench sample times samplers of different depths side by side, each for
// the depth its form gives; a wrong form among them is refused before
// any is timed (no partial table). By default it times one sampler of
// every kind.
func TestBenchSampleMixedAndEveryKind(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	code, stdout, stderr := runGraft(t, "bench", "sample", "--graph", "cora", "--sampler", "saint-rw:100:3", "--sampler", "neighbor:15,10", "--batch-size", "64", "--batches", "2", "--json")
	if code != 0 {
		t.Fatalf("mixed samplers: exit %d: %s", code, stderr)
	}
	samplers := benchSamplers(t, stdout)
	if got := strings.Join(samplers, " "); !strings.Contains(got, "saint-rw:100:3") || !strings.Contains(got, "neighbor:15,10") {
		t.Errorf("mixed samplers: rows of %q", got)
	}
	code, stdout, stderr = runGraft(t, "bench", "sample", "--graph", "cora", "--sampler", "neighbor:15,10", "--sampler", "saint-rw:100", "--batches", "2")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--sampler: sampler saint-rw:100: 1 fields") {
		t.Errorf("a wrong second form: exit %d, stdout %q, stderr %q; want exit 2 before any row", code, stdout, stderr)
	}
	code, stdout, stderr = runGraft(t, "bench", "sample", "--quick", "--batches", "2", "--json")
	if code != 0 {
		t.Fatalf("default samplers: exit %d: %s", code, stderr)
	}
	kinds := map[string]bool{}
	for _, s := range benchSamplers(t, stdout) {
		kind, _, _ := strings.Cut(s, ":")
		kinds[kind] = true
	}
	for _, form := range sample.Forms() {
		if kind, _, _ := strings.Cut(form, ":"); !kinds[kind] {
			t.Errorf("the default run times no %s sampler: %v", kind, kinds)
		}
	}
}

// benchSamplers lists the samplers of bench sample --json's rows.
func benchSamplers(t *testing.T, stdout string) []string {
	t.Helper()
	var samplers []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct {
			Sampler        string  `json:"sampler"`
			EdgesPerSecond float64 `json:"edges_per_second"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.EdgesPerSecond <= 0 {
			t.Errorf("row %q: no edges", line)
		}
		samplers = append(samplers, r.Sampler)
	}
	return samplers
}

// bench sample --cpuprofile writes a CPU profile of its runs, and says
// when it cannot.
func TestBenchSampleProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.pprof")
	if code, _, stderr := runGraft(t, "bench", "sample", "--quick", "--batches", "2", "--cpuprofile", path); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v", path, err)
	}
	missing := filepath.Join(dir, "missing", "cpu.pprof")
	code, _, stderr := runGraft(t, "bench", "sample", "--quick", "--batches", "2", "--cpuprofile", missing)
	if want := "--cpuprofile open " + missing; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("a profile under a missing directory: exit %d, %q, want %q", code, stderr, want)
	}
}

// bench train --sampler reports mini-batch epochs beside a floor measured
// in the same run.
func TestBenchTrainSampledQuick(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	code, stdout, stderr := runGraft(t, "bench", "train", "--quick", "--sampler", "neighbor:5,3", "--layers", "2", "--reps", "1", "--json")
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	var r struct {
		Graph             string  `json:"graph"`
		Sampler           string  `json:"sampler"`
		Batches           int     `json:"batches"`
		EpochMs           float64 `json:"epoch_ms"`
		FloorMs           float64 `json:"floor_ms"`
		TimesFloor        float64 `json:"times_floor"`
		TriadGBps         float64 `json:"triad_gbps"`
		GemmGFLOPS        float64 `json:"gemm_gflops"`
		GatheredBytes     float64 `json:"gathered_bytes"`
		Flops             float64 `json:"flops"`
		SampleGatherShare float64 `json:"sample_gather_share"`
		SampleShare       float64 `json:"sample_share"`
		GatherShare       float64 `json:"gather_share"`
		SampleAloneMs     float64 `json:"sample_alone_ms"`
		GatherAloneMs     float64 `json:"gather_alone_ms"`
		AloneShare        float64 `json:"sample_gather_alone_share"`
		PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &r); err != nil {
		t.Fatalf("%q: %v", stdout, err)
	}
	if r.Sampler != "neighbor:5,3" || r.Batches < 1 || r.EpochMs <= 0 || r.TriadGBps <= 0 || r.GemmGFLOPS <= 0 ||
		r.GatheredBytes <= 0 || r.Flops <= 0 || r.PeakRSSBytes <= 0 || r.SampleGatherShare <= 0 {
		t.Errorf("result %+v", r)
	}
	if r.SampleShare <= 0 || r.GatherShare <= 0 || math.Abs(r.SampleShare+r.GatherShare-r.SampleGatherShare) > 1e-9 {
		t.Errorf("sampling's share %v and gathering's %v, together %v", r.SampleShare, r.GatherShare, r.SampleGatherShare)
	}
	if r.SampleAloneMs <= 0 || r.GatherAloneMs <= 0 || math.Abs((r.SampleAloneMs+r.GatherAloneMs)/r.EpochMs-r.AloneShare) > 1e-9 {
		t.Errorf("alone: sampling %v ms, gathering %v ms, share %v of a %v ms epoch", r.SampleAloneMs, r.GatherAloneMs, r.AloneShare, r.EpochMs)
	}
	floor := max(r.GatheredBytes/(r.TriadGBps*1e6), r.Flops/(r.GemmGFLOPS*1e6))
	if math.Abs(r.FloorMs-floor) > 1e-9*floor || math.Abs(r.TimesFloor-r.EpochMs/floor) > 1e-9*r.TimesFloor {
		t.Errorf("floor %v ms and ×%v, want %v ms and ×%v", r.FloorMs, r.TimesFloor, floor, r.EpochMs/floor)
	}
	if code, _, stderr := runGraft(t, "bench", "train", "--quick", "--sampler", "neighbor:5,3", "--layers", "3"); code == 0 {
		t.Errorf("two fanouts for three layers: exit 0, %s", stderr)
	}
}

// bench train --precision bf16 gathers the features in bfloat16: fewer
// bytes than the fp32 run over the same batches (the features' half; the
// blocks' operators are the same).
func TestBenchTrainSampledBF16(t *testing.T) {
	t.Setenv("GRAFT_DATA", "")
	gathered := map[string]float64{}
	for _, precision := range []string{"fp32", "bf16"} {
		code, stdout, stderr := runGraft(t, "bench", "train", "--quick", "--sampler", "neighbor:5,3", "--layers", "2", "--reps", "1", "--eval=false", "--precision", precision, "--json")
		if code != 0 {
			t.Fatalf("%s: exit code %d, stderr:\n%s", precision, code, stderr)
		}
		var r struct {
			Precision     string  `json:"precision"`
			GatheredBytes float64 `json:"gathered_bytes"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &r); err != nil || r.Precision != precision {
			t.Fatalf("%s: %q: %v", precision, stdout, err)
		}
		gathered[precision] = r.GatheredBytes
	}
	if f16, f32 := gathered["bf16"], gathered["fp32"]; !(f16 > f32/2 && f16 < f32) {
		t.Errorf("gathered bytes: %v fp32, %v bf16; want between half and all", f32, f16)
	}
	if code, _, stderr := runGraft(t, "bench", "train", "--quick", "--sampler", "neighbor:5,3", "--layers", "2", "--precision", "fp16"); code == 0 || !strings.Contains(stderr, "fp16") {
		t.Errorf("--precision fp16: exit %d, %s", code, stderr)
	}
}
