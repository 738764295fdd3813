package fullgraph

import (
	"context"
	"math"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
)

// An entropy stage is lossless: training over parts with entropy:CODEC is
// training with CODEC bit for bit (the same losses and parameters through
// three layers, forward and backward, the last layer's exchange
// compressed too), and it sends fewer halo bytes.
func TestEntropyStageTrainsAsItsCodec(t *testing.T) {
	s := newSBMTask(t, 200, 5)
	cfg := equivalenceConfig("sage", s.classes)
	cfg.Epochs = 6
	parts, err := partition.Random{}.Partition(s.g, 3, partition.Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(s.g, parts, 3)
	if err != nil {
		t.Fatal(err)
	}
	run := func(codec string) ([]float64, []float32, int64) {
		var losses []float64
		var bytes int64
		opts := compressed(t, codec, "fixed:1", cfg.Epochs)
		opts.CompressLast = true
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
	for _, codec := range []string{"delta:2:0:0", "quant4", "quant8"} {
		wantLoss, wantParams, plainBytes := run(codec)
		gotLoss, gotParams, codedBytes := run("entropy:" + codec)
		for i := range wantLoss {
			if gotLoss[i] != wantLoss[i] {
				t.Fatalf("epoch %d: loss %v with entropy:%s, %v with %s", i+1, gotLoss[i], codec, wantLoss[i], codec)
			}
		}
		for i := range wantParams {
			if math.Float32bits(gotParams[i]) != math.Float32bits(wantParams[i]) {
				t.Fatalf("parameter %d: %v with entropy:%s, %v with %s", i, gotParams[i], codec, wantParams[i], codec)
			}
		}
		if codedBytes >= plainBytes {
			t.Errorf("entropy:%s sent %d halo bytes, %s %d", codec, codedBytes, codec, plainBytes)
		}
		t.Logf("%s: %d halo bytes, entropy-coded %d (%.3f×)", codec, plainBytes, codedBytes, float64(codedBytes)/float64(plainBytes))
	}
}
