package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/sample"
)

// The default and quick configurations time one sampler of every kind
// registered, each form valid for the depth it gives.
func TestSampleConfigsCoverEveryKind(t *testing.T) {
	var kinds []string
	for _, form := range sample.Forms() {
		kind, _, _ := strings.Cut(form, ":")
		kinds = append(kinds, kind)
	}
	for name, cfg := range map[string]SampleConfig{"default": DefaultSampleConfig(), "quick": QuickSampleConfig()} {
		var got []string
		for _, spec := range cfg.Samplers {
			kind, _, _ := strings.Cut(spec, ":")
			got = append(got, kind)
		}
		for _, kind := range kinds {
			if !slices.Contains(got, kind) {
				t.Errorf("%s: no %s sampler among %v", name, kind, cfg.Samplers)
			}
		}
		if err := CheckSamplers(cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSamplerLayers(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want int
	}{
		{"neighbor:15,10", 2}, {"neighbor:5", 1}, {"fastgcn:1,2,3,4", 4}, {"ladies:64,64:rownorm", 2}, {"ladies: 64, 64", 2},
		{"saint-rw:100:3", 5}, {"saint-node:100", 5}, {"cluster:10:2:stream", 5},
	} {
		if got := SamplerLayers(tt.spec, 5); got != tt.want {
			t.Errorf("SamplerLayers(%q, 5) = %d, want %d", tt.spec, got, tt.want)
		}
	}
	// Forms of different depths check together; a wrong one is found
	// before any graph is made.
	cfg := SampleConfig{Samplers: []string{"saint-rw:100:3", "neighbor:15,10", "ladies:8,8,8:rownorm"}, Layers: 3}
	if err := CheckSamplers(cfg); err != nil {
		t.Errorf("%v: %v", cfg.Samplers, err)
	}
	cfg.Samplers = append(cfg.Samplers, "saint-rw:100")
	if err := CheckSamplers(cfg); err == nil || !strings.Contains(err.Error(), "saint-rw:100") {
		t.Errorf("%v: %v, want an error naming saint-rw:100", cfg.Samplers, err)
	}
}
