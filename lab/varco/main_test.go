package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplitList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{" a , b,,c ", []string{"a", "b", "c"}},
	} {
		if got := splitList(c.in); strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("splitList(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRunResumes trains two configurations on the embedded Cora for two
// epochs, then asks for three: only the new one runs, so an interrupted
// sweep resumes where it stopped.
func TestRunResumes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.jsonl")
	args := func(configs string) []string {
		return []string{"-datasets", "cora", "-parts", "2", "-partitions", "random", "-seeds", "1",
			"-configs", configs, "-epochs", "2", "-hidden", "8", "-out", out}
	}
	if err := runCmd(args("full,fixed-4")); err != nil {
		t.Fatal(err)
	}
	if err := runCmd(args("full,fixed-4,quant8")); err != nil {
		t.Fatal(err)
	}
	recs, err := readRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]record{}
	for _, r := range recs {
		names = append(names, r.Config)
		byName[r.Config] = r
	}
	if got := strings.Join(names, ","); got != "full,fixed-4,quant8" {
		t.Fatalf("results hold %s, want full,fixed-4,quant8 (each once)", got)
	}
	for _, r := range recs {
		if len(r.Ratio) != 2 || len(r.Fwd) != 2 || len(r.EpochSec) != 2 || r.HaloBytes != r.Fwd[0]+r.Fwd[1]+r.Bwd[0]+r.Bwd[1] {
			t.Errorf("%s: per-epoch figures %v, %v, %v do not add up to %d halo bytes over 2 epochs", r.Config, r.Ratio, r.Fwd, r.Bwd, r.HaloBytes)
		}
		if r.key() != "cora/2/random/1/"+r.Config+"/2/8" {
			t.Errorf("key %q", r.key())
		}
	}
	full, fixed := byName["full"], byName["fixed-4"]
	if fixed.Ratio[0] != 4 || fixed.HaloBytes >= full.HaloBytes || fixed.HaloBytes == 0 {
		t.Errorf("fixed-4 at ratio %v sent %d halo bytes, full communication %d: want ratio 4 and fewer bytes", fixed.Ratio, fixed.HaloBytes, full.HaloBytes)
	}
}

// A codec spec names a configuration of its own: CODEC[@SCHEDULE][+last].
func TestSpecConfigs(t *testing.T) {
	got, err := pickConfigs("quant4,delta:2:0:0+last,delta:r@step:16:4:34:2")
	if err != nil {
		t.Fatal(err)
	}
	want := []config{{"quant4", "quant4", "fixed:1"}, {"delta:2:0:0+last", "delta:2:0:0", "fixed:1"}, {"delta:r@step:16:4:34:2", "delta:r", "step:16:4:34:2"}}
	if !slices.Equal(got, want) || got[0].last() || !got[1].last() || got[2].last() {
		t.Fatalf("pickConfigs = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"delta:3", "delta:2@zigzag:1", "zip"} {
		if _, err := pickConfigs(bad); err == nil {
			t.Errorf("pickConfigs(%q) accepted", bad)
		}
	}
}
