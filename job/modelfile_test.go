package job

import (
	"reflect"
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
