package nn

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maruel/safetensors"
)

func TestSafetensorsRoundTrip(t *testing.T) {
	for _, model := range []string{"gcn", "sage", "gat"} {
		t.Run(model, func(t *testing.T) {
			cfg := Config{Model: model, InFeatures: 7, Hidden: 5, Classes: 3, Heads: 2, Seed: 1}
			src, _ := NewModel(cfg)
			var names []string
			for _, p := range src.Params() {
				names = append(names, p.Name)
				for i := range p.Value.Data {
					p.Value.Data[i] = float32(i) + 0.5 // biases too, not only the initialised weights
				}
			}
			path := filepath.Join(t.TempDir(), "model.safetensors")
			if err := SaveParamsFile(path, src.Params(), map[string]string{"model": model}); err != nil {
				t.Fatal(err)
			}
			cfg.Seed = 2
			dst, _ := NewModel(cfg)
			md, err := LoadParamsFile(path, dst.Params())
			if err != nil {
				t.Fatal(err)
			}
			if md["model"] != model {
				t.Errorf("metadata %v", md)
			}
			for i, p := range dst.Params() {
				if !slices.Equal(p.Value.Data, src.Params()[i].Value.Data) {
					t.Errorf("%s changed in the round trip", p.Name)
				}
			}
			want := map[string][]string{
				"gcn":  {"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"},
				"sage": {"layers.0.lin_l.weight", "layers.0.lin_l.bias", "layers.0.lin_r.weight", "layers.1.lin_l.weight", "layers.1.lin_l.bias", "layers.1.lin_r.weight"},
				"gat":  {"layers.0.lin.weight", "layers.0.att_src", "layers.0.att_dst", "layers.0.bias", "layers.1.lin.weight", "layers.1.att_src", "layers.1.att_dst", "layers.1.bias"},
			}[model]
			if !slices.Equal(names, want) {
				t.Errorf("names %v, want %v", names, want)
			}
		})
	}
}

// TestSafetensorsLayout checks that weights are stored as PyTorch's
// [out, in], so torch.nn.Linear(in, out).load_state_dict accepts them.
func TestSafetensorsLayout(t *testing.T) {
	m, _ := NewModel(Config{Model: "gat", InFeatures: 4, Hidden: 3, Classes: 2, Heads: 2, Seed: 1})
	var buf bytes.Buffer
	if err := SaveParams(&buf, m.Params(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]uint64{}
	for _, ts := range f.Tensors {
		shapes[ts.Name] = ts.Shape
		if ts.Name == "layers.0.lin.weight" {
			w := m.Layers[0].(*GAT).Weight.Value // [in=4, out=6]
			for o := 0; o < 6; o++ {
				for i := 0; i < 4; i++ {
					got := math.Float32frombits(binary.LittleEndian.Uint32(ts.Data[4*(o*4+i):]))
					if got != w.At(i, o) {
						t.Fatalf("stored [%d][%d] = %v, want W[%d][%d] = %v", o, i, got, i, o, w.At(i, o))
					}
				}
			}
		}
	}
	for name, want := range map[string][]uint64{
		"layers.0.lin.weight": {6, 4}, "layers.0.att_src": {1, 2, 3}, "layers.0.bias": {6},
		"layers.1.lin.weight": {2, 6}, "layers.1.att_dst": {1, 1, 2}, "layers.1.bias": {2},
	} {
		if !slices.Equal(shapes[name], want) {
			t.Errorf("%s has shape %v, want %v", name, shapes[name], want)
		}
	}
}

func TestLoadParamsMismatch(t *testing.T) {
	save := func(cfg Config) []byte {
		t.Helper()
		m, _ := NewModel(cfg)
		var buf bytes.Buffer
		if err := SaveParams(&buf, m.Params(), nil); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	base := Config{Model: "gcn", InFeatures: 6, Hidden: 4, Classes: 3}
	gcn := save(base)
	m, _ := NewModel(base)
	var extra bytes.Buffer
	if err := SaveParams(&extra, append(m.Params(), newBias("head.bias", 2)), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		data []byte
		want string
	}{
		{"wider hidden layer", Config{Model: "gcn", InFeatures: 6, Hidden: 5, Classes: 3}, gcn, "shape"},
		{"other model", Config{Model: "sage", InFeatures: 6, Hidden: 4, Classes: 3}, gcn, "lacks"},
		{"extra tensor in file", base, extra.Bytes(), "head.bias"},
		{"not safetensors", base, []byte("hello, world, this is not a file"), "safetensors"},
	} {
		m, _ := NewModel(tc.cfg)
		_, err := LoadParams(bytes.NewReader(tc.data), m.Params())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
