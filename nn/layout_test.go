package nn

import (
	"bytes"
	"strings"
	"testing"
)

func TestRenamedSharesValues(t *testing.T) {
	m, err := NewModel(Config{Model: "gcn", InFeatures: 4, Hidden: 3, Classes: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	pyg, err := Renamed(m.Params(), "gcn", PyGLayout)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pyg {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, " "); got != "convs.0.lin.weight convs.0.bias convs.1.lin.weight convs.1.bias" {
		t.Errorf("names %s", got)
	}
	var buf bytes.Buffer
	if err := SaveParams(&buf, pyg, nil); err != nil {
		t.Fatal(err)
	}
	m2, _ := NewModel(Config{Model: "gcn", InFeatures: 4, Hidden: 3, Classes: 2, Seed: 2})
	if _, err := LoadParams(bytes.NewReader(buf.Bytes()), m2.Params()); err == nil {
		t.Error("a pyg file loaded under graft's own names")
	}
	into, _ := Renamed(m2.Params(), "gcn", PyGLayout)
	if _, err := LoadParams(bytes.NewReader(buf.Bytes()), into); err != nil {
		t.Fatal(err)
	}
	if a, b := m.Params()[0].Value.Data, m2.Params()[0].Value.Data; a[5] != b[5] || a[0] != b[0] {
		t.Error("loading into the renamed parameters did not set the model's")
	}
}

func TestRenamedErrors(t *testing.T) {
	m, _ := NewModel(Config{Model: "mlp", InFeatures: 4, Hidden: 3, Classes: 2})
	if _, err := Renamed(m.Params(), "mlp", PyGLayout); err == nil || !strings.Contains(err.Error(), "no PyTorch Geometric layout") {
		t.Errorf("mlp in the pyg layout: %v", err)
	}
	if _, err := ParseLayout("keras"); err == nil {
		t.Error("ParseLayout accepted keras")
	}
	if l, err := ParseLayout(""); l != TorchLayout || err != nil {
		t.Errorf(`ParseLayout("") = %q, %v`, l, err)
	}
}
