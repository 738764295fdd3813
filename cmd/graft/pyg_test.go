package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/nn"
)

// TestSaveFormatPyG checks the key names and shapes that --save-format pyg
// writes against those of the PyTorch Geometric model in docs/predict.md
// (a torch.nn.ModuleList called convs), which load_state_dict(strict=True)
// demands. The keys come from PyG's sources (torch_geometric/nn/conv/):
//
//   - gcn_conv.py, GCNConv.__init__: self.lin = Linear(in_channels,
//     out_channels, bias=False, weight_initializer='glorot') and
//     self.bias = Parameter(torch.empty(out_channels)).
//   - sage_conv.py, SAGEConv.__init__ (aggr='mean', root_weight=True,
//     project=False by default): self.lin_l = Linear(aggr_out_channels,
//     out_channels, bias=bias) and self.lin_r = Linear(in_channels[1],
//     out_channels, bias=False).
//   - gat_conv.py, GATConv.__init__ since PyG 2.5 (pull request 8397, "Properly
//     initialize modules in GATConv depending on whether the input is
//     bipartite"): self.lin = Linear(in_channels, heads * out_channels,
//     bias=False, weight_initializer='glorot') for an int in_channels
//     (lin_src and lin_dst are None); self.att_src and self.att_dst =
//     Parameter(torch.empty(1, heads, out_channels)); self.bias =
//     Parameter(torch.empty(heads * out_channels)) with concat=True, of
//     out_channels with concat=False. lin_edge, att_edge and res are None
//     without edge_dim and residual. (PyG 2.0 to 2.4 named lin lin_src and
//     registered the same module again as lin_dst.)
//
// torch_geometric.nn.dense.linear.Linear keeps weight as torch.nn.Linear
// does: [out_channels, in_channels].
func TestSaveFormatPyG(t *testing.T) {
	const in, classes = 1433, 7 // Cora
	dir := t.TempDir()
	for _, tc := range []struct {
		model string
		args  []string
		want  map[string][]int
	}{
		{"gcn", []string{"--layers", "3", "--hidden", "16"}, map[string][]int{
			"convs.0.lin.weight": {16, in}, "convs.0.bias": {16},
			"convs.1.lin.weight": {16, 16}, "convs.1.bias": {16},
			"convs.2.lin.weight": {classes, 16}, "convs.2.bias": {classes},
		}},
		{"sage", []string{"--hidden", "32"}, map[string][]int{
			"convs.0.lin_l.weight": {32, in}, "convs.0.lin_l.bias": {32}, "convs.0.lin_r.weight": {32, in},
			"convs.1.lin_l.weight": {classes, 32}, "convs.1.lin_l.bias": {classes}, "convs.1.lin_r.weight": {classes, 32},
		}},
		// Hidden layers concatenate 4 heads of 8; the output layer averages
		// one head (concat=False).
		{"gat", []string{"--heads", "4", "--hidden", "8"}, map[string][]int{
			"convs.0.lin.weight": {32, in}, "convs.0.att_src": {1, 4, 8}, "convs.0.att_dst": {1, 4, 8}, "convs.0.bias": {32},
			"convs.1.lin.weight": {classes, 32}, "convs.1.att_src": {1, 1, classes}, "convs.1.att_dst": {1, 1, classes}, "convs.1.bias": {classes},
		}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			args := append([]string{"--model", tc.model, "--epochs", "1"}, tc.args...)
			pyg, _ := trainSaved(t, dir, tc.model+".pyg.safetensors", append(args, "--save-format", "pyg")...)
			h, err := nn.ReadParamsHeader(pyg)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(h.Shapes, tc.want, slices.Equal) {
				t.Errorf("--save-format pyg wrote %v, want %v", h.Shapes, tc.want)
			}
			if h.Metadata["layout"] != "pyg" {
				t.Errorf("metadata layout %q, want pyg", h.Metadata["layout"])
			}

			// The default stays graft's own names, with the same tensors.
			torch, _ := trainSaved(t, dir, tc.model+".safetensors", args...)
			if h, err = nn.ReadParamsHeader(torch); err != nil {
				t.Fatal(err)
			}
			for name, shape := range h.Shapes {
				if pygName := renameForTest(tc.model, name); !slices.Equal(tc.want[pygName], shape) {
					t.Errorf("default layout has %s %v; the pyg layout's %s is %v", name, shape, pygName, tc.want[pygName])
				}
			}
			if len(h.Shapes) != len(tc.want) || h.Metadata["layout"] != "torch" {
				t.Errorf("default layout: %d tensors (want %d), layout %q", len(h.Shapes), len(tc.want), h.Metadata["layout"])
			}
		})
	}
}

// renameForTest maps graft's names to PyG's independently of nn.Renamed:
// layers.I becomes convs.I, and GCN's weight moves into lin.
func renameForTest(model, name string) string {
	index, field, _ := strings.Cut(strings.TrimPrefix(name, "layers."), ".")
	if model == "gcn" && field == "weight" {
		field = "lin.weight"
	}
	return "convs." + index + "." + field
}
