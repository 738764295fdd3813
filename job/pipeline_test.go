package job

import (
	"context"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train"
)

// An interrupted pipeline run stops every stage after the same epoch (the
// one after the epoch whose report saw the interruption), and says that nothing was saved
// because the mode does not checkpoint (not to add --checkpoint-dir, which
// it refuses).
func TestPipelineInterrupted(t *testing.T) {
	s := coraSpec(t)
	s.Train.Model.Layers, s.Train.Epochs = 3, 50
	s.Sampler, s.BatchSize = "neighbor:5,5,5", 64
	s.Pipeline = &PipelineSpec{Stages: 3, Micros: 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var epochs []int
	s.Progress = func(e metrics.Epoch) {
		epochs = append(epochs, e.Epoch)
		if e.Epoch == 2 {
			cancel()
		}
	}
	_, err := Run(ctx, s)
	if err == nil || !strings.Contains(err.Error(), train.ErrInterrupted.Error()+" after epoch 3") || !strings.Contains(err.Error(), "nothing was saved (--mode pipeline does not checkpoint)") {
		t.Fatalf("error %v after epochs %v", err, epochs)
	}
}
