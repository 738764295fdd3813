package fullgraph

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
)

// gradRun trains s on four workers with gradient compression spec ("" for
// the exact all-reduce) at GOMAXPROCS procs and returns rank 0's
// parameters and the gradient bytes sent.
func gradRun(t *testing.T, s sbmTask, spec string, procs int) ([]float32, int64) {
	t.Helper()
	prev := runtime.GOMAXPROCS(procs)
	defer runtime.GOMAXPROCS(prev)
	parts, err := partition.Random{}.Partition(s.g, 4, partition.Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := equivalenceConfig("sage", s.classes)
	var o Options
	if spec != "" {
		o.Grad = func() (gradcomp.Method, error) { return gradcomp.New(spec, gradcomp.Options{Seed: 5}) }
	}
	var bytes int64
	_, tr, err := RunInProcess(context.Background(), cfg, s.problem(), layout, o, func(e metrics.Epoch) error {
		bytes += e.BytesGrad
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for _, p := range tr.Model().Params() {
		out = append(out, p.Value.Data...)
	}
	return out, bytes
}

func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// Gradient compression keeps a run's bits independent of GOMAXPROCS, and
// "none" is the exact all-reduce.
func TestGradCompressionDeterministic(t *testing.T) {
	s := newSBMTask(t, 400, 3)
	exact, exactBytes := gradRun(t, s, "", 1)
	none, noneBytes := gradRun(t, s, "none", 4)
	if i := sameBits(exact, none); i >= 0 || noneBytes != exactBytes {
		t.Fatalf("none differs from the exact all-reduce at value %d (bytes %d vs %d)", i, noneBytes, exactBytes)
	}
	for _, spec := range []string{"topk:0.05", "powersgd:2", "quant4"} {
		t.Run(spec, func(t *testing.T) {
			one, bytes := gradRun(t, s, spec, 1)
			four, _ := gradRun(t, s, spec, 4)
			if i := sameBits(one, four); i >= 0 {
				t.Fatalf("GOMAXPROCS 4 differs from 1 at parameter value %d: %v vs %v", i, four[i], one[i])
			}
			if i := sameBits(one, exact); i < 0 {
				t.Errorf("compressed training gave the exact run's parameters")
			}
			if bytes <= 0 || bytes >= exactBytes {
				t.Errorf("%d gradient bytes against %d exact", bytes, exactBytes)
			}
		})
	}
}
