package fullgraph

import (
	"math"
	"testing"
)

// An entropy stage is lossless: training over parts with entropy:CODEC is
// training with CODEC bit for bit (the same losses and parameters through
// three layers, forward and backward, the last layer's exchange
// compressed too), and it sends fewer halo bytes.
func TestEntropyStageTrainsAsItsCodec(t *testing.T) {
	s := newSBMTask(t, 200, 5)
	cfg := equivalenceConfig("sage", s.classes)
	cfg.Epochs = 6
	layout := threeRandomParts(t, s)
	run := func(codec string) ([]float64, []float32, int64) {
		opts := compressed(t, codec, "fixed:1", cfg.Epochs)
		opts.CompressLast = true
		return trainCompressed(t, cfg, s, layout, opts)
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
