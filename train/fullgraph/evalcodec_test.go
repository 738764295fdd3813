package fullgraph

import (
	"context"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train"
)

// Compressing the evaluation passes (Options.EvalCodec) changes what the
// epochs' evaluations see and send, never the training: the losses are
// the same bit for bit. The kept model is evaluated once more with whole
// rows, so the result's accuracies and validation loss are those of exact
// evaluation at the kept epoch, whichever epoch the compressed
// evaluations chose.
func TestEvalCodecLeavesTrainingAndReportsExactly(t *testing.T) {
	s := newSBMTask(t, 200, 5)
	cfg := equivalenceConfig("sage", s.classes)
	cfg.Epochs = 8
	layout := threeRandomParts(t, s)
	run := func(evalCodec string) (train.Result, []metrics.Epoch) {
		opts := compressed(t, "quant4", "fixed:1", cfg.Epochs)
		if evalCodec != "" {
			opts.EvalCodec = codec(t, evalCodec)
		}
		var epochs []metrics.Epoch
		res, _, err := RunInProcess(context.Background(), cfg, s.problem(), layout, opts, func(m metrics.Epoch) error {
			epochs = append(epochs, m)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, epochs
	}
	_, exact := run("")
	res, coded := run("quant2")
	var exactBytes, codedBytes int64
	differ := false
	for i := range exact {
		if coded[i].Loss != exact[i].Loss {
			t.Fatalf("epoch %d: training loss %v with compressed evaluation, %v without", i+1, coded[i].Loss, exact[i].Loss)
		}
		differ = differ || coded[i].ValLoss != exact[i].ValLoss
		exactBytes += exact[i].BytesEval
		codedBytes += coded[i].BytesEval
	}
	if !differ {
		t.Error("every epoch's validation loss is the same through quant2 as with whole rows: the evaluation passes were not compressed")
	}
	if exactBytes == 0 || codedBytes*2 > exactBytes {
		t.Errorf("evaluation sent %d bytes through quant2, %d whole", codedBytes, exactBytes)
	}
	kept := exact[res.Best.Epoch-1]
	if res.Best.ValAcc != kept.ValAcc || res.Best.TestAcc != kept.TestAcc || res.Best.ValLoss != kept.ValLoss || res.Best.TrainAcc != kept.TrainAcc {
		t.Errorf("kept epoch %d: val %v test %v val loss %v train %v, exact evaluation of that epoch val %v test %v val loss %v train %v",
			res.Best.Epoch, res.Best.ValAcc, res.Best.TestAcc, res.Best.ValLoss, res.Best.TrainAcc, kept.ValAcc, kept.TestAcc, kept.ValLoss, kept.TrainAcc)
	}
}
