package fullgraph

import (
	"context"
	"math"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
)

// Delta coding at 32 bits with threshold 0 sends every row exactly, so
// training with it is training with full communication, bit for bit: the
// same losses and parameters, forward and backward, through three layers.
// Below 32 bits it compresses, and the run differs.
func TestDeltaExactEqualsFullCommunication(t *testing.T) {
	s := newSBMTask(t, 200, 5)
	cfg := equivalenceConfig("sage", s.classes)
	cfg.Epochs = 8
	layout := threeRandomParts(t, s)
	run := func(codec string) ([]float64, []float32, int64) {
		return trainCompressed(t, cfg, s, layout, compressed(t, codec, "fixed:1", cfg.Epochs))
	}
	wantLoss, wantParams, fullBytes := run("none")
	gotLoss, gotParams, exactBytes := run("delta:32:0")
	for i := range wantLoss {
		if gotLoss[i] != wantLoss[i] {
			t.Fatalf("epoch %d: loss %v with delta:32:0, %v with none", i+1, gotLoss[i], wantLoss[i])
		}
	}
	for i := range wantParams {
		if math.Float32bits(gotParams[i]) != math.Float32bits(wantParams[i]) {
			t.Fatalf("parameter %d: %v with delta:32:0, %v with none", i, gotParams[i], wantParams[i])
		}
	}
	if exactBytes <= fullBytes {
		t.Fatalf("delta:32:0 sent %d halo bytes, none %d: the bitmaps are missing", exactBytes, fullBytes)
	}
	lossy, _, lossyBytes := run("delta:2:0.1:4")
	if lossy[len(lossy)-1] == wantLoss[len(wantLoss)-1] || lossyBytes >= fullBytes/2 {
		t.Fatalf("delta:2:0.1:4: last loss %v (full %v), %d bytes (full %d)", lossy[len(lossy)-1], wantLoss[len(wantLoss)-1], lossyBytes, fullBytes)
	}
}

// threeRandomParts is s's graph cut into 3 random parts.
func threeRandomParts(t *testing.T, s sbmTask) *partition.Layout {
	t.Helper()
	parts, err := partition.Random{}.Partition(s.g, 3, partition.Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, 3)
	if err != nil {
		t.Fatal(err)
	}
	return layout
}

// trainCompressed trains cfg on s over layout with opts and returns every
// epoch's loss, the parameters after the last and the halo bytes sent.
func trainCompressed(t *testing.T, cfg train.Config, s sbmTask, layout *partition.Layout, opts Options) ([]float64, []float32, int64) {
	t.Helper()
	var losses []float64
	var bytes int64
	_, tr, err := RunInProcess(context.Background(), cfg, s.problem(), layout, opts, func(m metrics.Epoch) error {
		losses = append(losses, m.Loss)
		bytes += m.BytesFwd + m.BytesBwd
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var params []float32
	for _, p := range tr.Model().Params() {
		params = append(params, p.Value.Data...)
	}
	return losses, params, bytes
}
