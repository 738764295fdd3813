package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/graft-gnn/graft/"

// layer is each package's place, bottom up. A new package must be given
// one here: where it sits is a design decision.
var layer = map[string]int{
	"internal/cpuid": 0, "internal/freelist": 0, "internal/atomicfile": 0, "internal/stats": 0,
	"internal/sysstat": 0, "internal/datatest": 0, "internal/guardtest": 0, "internal/layers": 0,
	"internal/codelimits": 0, "internal/memacct": 0, "internal/prefetch": 0, "internal/hugepage": 0,
	"internal/filekind": 0,
	"internal/parallel": 1,
	"internal/vec":      2, "internal/bf16": 2,
	"internal/gemm": 3, "internal/spmm": 3, "internal/dropmask": 3,
	"tensor": 4, "optim": 4,
	"graph":   5,
	"dataset": 6, "nn": 6, "comm": 6, "compress": 6, "partition": 6, "checkpoint": 6, "metrics": 6,
	"launch": 7, "comm/commtest": 7, "halo": 7, "partstore": 7, "sample": 7, "gradcomp": 7,
	"train":           8,
	"train/fullgraph": 9, "train/decentral": 9, "train/minibatch": 9, "train/async": 9, "train/dataparallel": 9,
	"train/traintest": 9,  // what the trainers' tests share
	"train/pipeline":  10, // its stages run the mini-batch trainer's batches
	"job":             11, "internal/bench": 11,
	"cmd/graft": 12, "lab/varco": 12, "lab/accuracy": 12, "lab/wire": 12, "lab/ogblayout": 12,
}

// "The layered picture holds: the kernels and tensor/graph at the bottom,
// nn/comm/compress/partition above, the trainers above those, cmd on top;
// nothing imports upward."
func TestPackagesImportOnlyLowerLayers(t *testing.T) {
	// A package imports only lower layers; its tests may also read a
	// package of its own layer (the partitioners' tests load datasets).
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} | {{join .TestImports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		from, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s has no layer: give it one in layers_test.go", pkg)
			continue
		}
		inTest := false
		for _, imp := range fields[1:] {
			if imp == "|" {
				inTest = true
				continue
			}
			dep, ours := strings.CutPrefix(imp, module)
			if !ours || dep == pkg {
				continue
			}
			if to, ok := layer[dep]; ok && (to > from || to == from && !inTest) {
				t.Errorf("%s (layer %d) imports %s (layer %d): arrows point only downward", pkg, from, dep, to)
			}
		}
	}
}
