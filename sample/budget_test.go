package sample

import (
	"strings"
	"testing"
)

// A form whose draws would not fit in memory is refused with the sizes,
// before anything is drawn; on a small graph saint-node:1000000000 and
// fastgcn:1000000000,5 crashed the runtime out of memory. Forms that fit
// are made, and the data-parallel parser refuses alike.
func TestDrawsBeyondMemoryRefused(t *testing.T) {
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, bool) { return 1 << 30, true }
	g, _, _ := testGraph(t, 60, 4)
	cfg := testConfig(g, GCN, 2, 8)
	for _, tc := range []struct{ spec, want string }{
		{"saint-node:100000000", "100000000 draws a subgraph take 23.8 GiB (4 bytes a draw, 64 subgraphs at once), more than the 1.0 GiB"},
		{"saint-edge:50000000", "100000000 draws a subgraph take 23.8 GiB"},
		{"saint-rw:1000:99999", "100000000 draws a subgraph take 23.8 GiB"},
		{"fastgcn:100000000,5", "100000005 draws a batch take 8.9 GiB (12 bytes a draw, 8 batches at once)"},
		{"ladies:5,100000000", "100000005 draws a batch take 8.9 GiB"},
		{"fastgcn:2000000000,5", "at most 2³⁰"},
	} {
		if _, err := New(tc.spec, cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.spec, err, tc.want)
		}
		if _, err := ParsePartSpec(tc.spec, 2); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s over parts: %v; want an error containing %q", tc.spec, err, tc.want)
		}
	}
	for _, spec := range []string{"saint-node:100000", "saint-rw:3000:2", "fastgcn:100000,100000", "ladies:400,400"} {
		if _, err := New(spec, cfg); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// Blanks in a form are ignored by every sampler, as the neighbour
// sampler's fanouts always were; GraphSAINT's and Cluster-GCN's counts
// were "not a count".
func TestFormBlanksIgnored(t *testing.T) {
	g, _, _ := testGraph(t, 60, 4)
	cfg := testConfig(g, GCN, 2, 8)
	for _, spec := range []string{"neighbor:5, 5", "saint-rw: 5:2", "saint-node:20 ", "cluster:4 :2", "fastgcn:10, 10", "ladies:10,10: rownorm"} {
		if _, err := New(spec, cfg); err != nil {
			t.Errorf("%q: %v", spec, err)
		}
		if _, err := ParsePartSpec(spec, 2); err != nil {
			t.Errorf("%q over parts: %v", spec, err)
		}
	}
}
