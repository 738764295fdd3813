package job

import (
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/nn"
)

func TestModelInfoRoundTrip(t *testing.T) {
	for _, info := range []ModelInfo{
		{Model: nn.Config{Model: "gat", Layers: 3, Hidden: 8, Heads: 4, OutputHeads: 1, InFeatures: 1433, Classes: 7,
			Activation: nn.ELU, Seed: 9}, Layout: nn.PyGLayout, Dataset: "cora", Source: "cora", Split: "random:20:30",
			SplitSeed: 9, LCC: true, RowNormalize: false, Features: "dense", Nodes: 2485, Epoch: 40,
			TrainAcc: 1, ValAcc: 0.7933333333333333, TestAcc: 0.8123, Scored: true},
		// No source, and the preparation and split seed not recorded.
		{Model: nn.Config{Model: "sage", Layers: 2, Hidden: 32, Heads: 1, OutputHeads: 1, InFeatures: 767, Classes: 10,
			Activation: nn.ReLU, Normalize: true, Seed: 1}, Layout: nn.TorchLayout, Dataset: "amazon-computers",
			Split: "frac:0.1:0.1", SplitSeed: 1, RowNormalize: true, Features: "sparse", Nodes: 13752, Epoch: 2, Scored: true,
			Assumed: []string{"lcc", "row_normalize", "split_seed"}},
	} {
		got, err := ReadModelInfo(&nn.ParamsHeader{Metadata: info.metadata()})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, info) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, info)
		}
	}
}

func TestModelInfoErrors(t *testing.T) {
	good := ModelInfo{Model: nn.Config{Model: "gcn", Layers: 2, Hidden: 16, Heads: 1, OutputHeads: 1, InFeatures: 5, Classes: 2,
		Activation: nn.ReLU}, Layout: nn.TorchLayout, Dataset: "d", Split: "public", Features: "dense"}.metadata()
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"newer format", "format", "graft-model/2", "a newer graft wrote it"},
		{"bad width", "hidden", "sixteen", `hidden="sixteen": want an integer`},
		{"bad flag", "lcc", "maybe", "want true or false"},
		{"missing layers", "layers", "", `lacks "layers"`},
		{"bad layout", "layout", "keras", "want torch or pyg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := map[string]string{}
			for k, v := range good {
				md[k] = v
			}
			md[tc.key] = tc.value
			if tc.value == "" {
				delete(md, tc.key)
			}
			_, err := ReadModelInfo(&nn.ParamsHeader{Metadata: md})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A model file whose metadata describes a model far larger than its
// tensors is refused before the model is built: widths of 2^24 allocated
// gigabytes, and 2^31 crashed graft evaluate and predict.
func TestLoadSavedRefusesMetadataBeyondItsTensors(t *testing.T) {
	for _, model := range []string{"gcn", "sage", "gat"} {
		cfg := nn.Config{Model: model, Layers: 2, Hidden: 4, Heads: 2, OutputHeads: 1, InFeatures: 5, Classes: 3, Activation: nn.ReLU}
		m, err := nn.NewModel(cfg)
		if err != nil {
			t.Fatal(err)
		}
		info := ModelInfo{Model: cfg, Layout: nn.TorchLayout, Dataset: "d", Split: "public", Features: "dense"}
		path := filepath.Join(t.TempDir(), "m.safetensors")
		write := func(md map[string]string) {
			if err := nn.SaveParamsFile(path, m.Params(), md); err != nil {
				t.Fatal(err)
			}
		}
		write(info.metadata())
		if _, err := LoadSaved(path); err != nil {
			t.Fatalf("%s: the honest file: %v", model, err)
		}
		for _, tc := range []struct{ key, value, want string }{
			{"in_features", "16777216", "16777216 input features"},
			{"hidden", "16777216", "16777216 hidden"},
			{"classes", "16777216", "16777216 classes"},
			{"heads", "16777216", "16777216 heads"},
			{"layers", "65536", "describes 65536 layers, but it holds"},
		} {
			if tc.key == "heads" && model != "gat" {
				continue
			}
			md := info.metadata()
			md[tc.key] = tc.value
			write(md)
			var err error
			n := allocated(func() { _, err = LoadSaved(path) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %s=%s: error %v, want one containing %q", model, tc.key, tc.value, err, tc.want)
			}
			if n > 16<<20 {
				t.Errorf("%s, %s=%s: refusing it allocated %d MiB", model, tc.key, tc.value, n>>20)
			}
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
