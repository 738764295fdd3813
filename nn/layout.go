package nn

import (
	"fmt"
	"os"
	"strings"

	"github.com/maruel/safetensors"
)

// Layout names the key names of a parameter file.
type Layout string

const (
	// TorchLayout is graft's own: layers.I.weight and layers.I.bias for
	// GCN, layers.I.lin_l.weight, layers.I.lin_l.bias and
	// layers.I.lin_r.weight for GraphSAGE, layers.I.lin.weight,
	// layers.I.att_src, layers.I.att_dst and layers.I.bias for GAT.
	TorchLayout Layout = "torch"
	// PyGLayout names the parameters as a PyTorch Geometric model whose
	// layers are a torch.nn.ModuleList called convs of GCNConv, SAGEConv or
	// GATConv (PyG 2.5 or later) holds them: convs.I.lin.weight and
	// convs.I.bias (GCNConv); convs.I.lin_l.weight, convs.I.lin_l.bias and
	// convs.I.lin_r.weight (SAGEConv); convs.I.lin.weight, convs.I.att_src,
	// convs.I.att_dst and convs.I.bias (GATConv). Shapes are PyG's: Linear
	// weights [out, in], attention vectors [1, heads, out].
	PyGLayout Layout = "pyg"
)

// Layouts lists the layouts ParseLayout accepts.
func Layouts() []Layout { return []Layout{TorchLayout, PyGLayout} }

// ParseLayout parses a layout name; "" is TorchLayout.
func ParseLayout(s string) (Layout, error) {
	switch Layout(s) {
	case "", TorchLayout:
		return TorchLayout, nil
	case PyGLayout:
		return PyGLayout, nil
	}
	return "", fmt.Errorf("unknown parameter layout %q (want torch or pyg)", s)
}

// Renamed returns params named as layout names them for a model of the
// given kind (Config.Model). The returned parameters share their values
// with params, so saving them saves params and loading into them loads
// params.
func Renamed(params []*Param, model string, layout Layout) ([]*Param, error) {
	if layout == TorchLayout || layout == "" {
		return params, nil
	}
	if layout != PyGLayout {
		return nil, fmt.Errorf("nn: unknown parameter layout %q", layout)
	}
	out := make([]*Param, len(params))
	for i, p := range params {
		name, err := pygName(model, p.Name)
		if err != nil {
			return nil, err
		}
		q := *p
		q.Name = name
		out[i] = &q
	}
	return out, nil
}

// pygName maps one of graft's names (layers.I.rest) to PyG's: the layer
// list is convs, and GCNConv keeps its weight in a bias-free Linear called
// lin (its bias is the convolution's own).
func pygName(model, name string) (string, error) {
	rest, ok := strings.CutPrefix(name, "layers.")
	dot := strings.IndexByte(rest, '.')
	if !ok || dot < 0 {
		return "", fmt.Errorf("nn: parameter %s is not named layers.I.NAME", name)
	}
	index, field := rest[:dot], rest[dot+1:]
	switch model {
	case "gcn":
		if field == "weight" {
			field = "lin.weight"
		}
	case "sage", "gat":
	default:
		return "", fmt.Errorf("nn: model %q has no PyTorch Geometric layout (gcn, sage and gat do)", model)
	}
	return "convs." + index + "." + field, nil
}

// ParamsHeader is what a parameter file says about itself: its metadata and
// the name and shape of every tensor, in the file's order.
type ParamsHeader struct {
	Metadata map[string]string
	Names    []string
	Shapes   map[string][]int
}

// ReadParamsHeader reads the metadata and tensor shapes of a safetensors
// file without loading parameters into a model.
func ReadParamsHeader(path string) (*ParamsHeader, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	if what := notModelFile(buf); what != "" {
		return nil, fmt.Errorf("nn: %s is not a graft model file, the safetensors file graft train --save writes: %s", path, what)
	}
	f, err := safetensors.Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("nn: %s is not a valid safetensors file: %w", path, err)
	}
	h := &ParamsHeader{Metadata: f.Metadata, Shapes: make(map[string][]int, len(f.Tensors))}
	if h.Metadata == nil {
		h.Metadata = map[string]string{}
	}
	for _, t := range f.Tensors {
		shape := make([]int, len(t.Shape))
		for i, s := range t.Shape {
			shape[i] = int(s)
		}
		h.Names = append(h.Names, t.Name)
		h.Shapes[t.Name] = shape
	}
	return h, nil
}
