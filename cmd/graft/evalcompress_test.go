package main

import (
	"strings"
	"testing"
)

func TestTrainEvalCompressRefusals(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--parts", "2", "--eval-compress", "quant9"}, "--eval-compress: unknown compressor"},
		{[]string{"--parts", "2", "--eval-compress", "delta:2:0:0"}, "cannot compress evaluation"},
		{[]string{"--parts", "2", "--eval-compress", "entropy:delta:2:0:0"}, "cannot compress evaluation"},
		{[]string{"--parts", "2", "--eval-compress", "topk"}, "cannot compress evaluation"},
		{[]string{"--parts", "2", "--eval-compress", "quant8", "--sampler", "neighbor:5,5"}, "sampled, asynchronous and pipelined runs"},
		{[]string{"--parts", "2", "--compress", "truncate", "--schedule", "adaptive", "--eval-compress", "quant8"}, "the schedule follows the validation loss"},
	}
	for _, tt := range tests {
		code, _, stderr := runGraft(t, append([]string{"train", "--epochs", "2"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") > 2 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// --eval-compress sends the evaluations' halo rows in fewer bytes, counted
// as bytes_eval apart from the training's; the training is the same, and
// the kept model's accuracies are exact evaluation's.
func TestTrainEvalCompress(t *testing.T) {
	args := []string{"--epochs", "4", "--parts", "2", "--compress", "quant4"}
	whole, _ := trainSummary(t, args...)
	coded, stderr := trainSummary(t, append(args, "--eval-compress", "quant8")...)
	switch {
	case coded.EvalCompress != "quant8":
		t.Errorf("eval_compress %q, want quant8", coded.EvalCompress)
	case whole.BytesEval == 0 || coded.BytesEval*2 > whole.BytesEval:
		t.Errorf("bytes_eval %d through quant8, %d whole", coded.BytesEval, whole.BytesEval)
	case coded.BytesTotal != whole.BytesTotal:
		t.Errorf("bytes_total %d with --eval-compress, %d without: the training changed", coded.BytesTotal, whole.BytesTotal)
	case coded.BestEpoch == whole.BestEpoch && (coded.TestAcc != whole.TestAcc || coded.BestValAcc != whole.BestValAcc):
		t.Errorf("kept epoch %d: test %v val %v with --eval-compress, %v %v exactly", coded.BestEpoch, coded.TestAcc, coded.BestValAcc, whole.TestAcc, whole.BestValAcc)
	}
	if strings.Contains(stderr, "panic") {
		t.Error(stderr)
	}
	if whole.EvalCompress != "" {
		t.Errorf("eval_compress %q without --eval-compress", whole.EvalCompress)
	}
	sum, one := trainSummary(t, "--epochs", "1", "--eval-compress", "quant8")
	if !strings.Contains(one, "--eval-compress quant8") || sum.EvalCompress != "" {
		t.Errorf("one worker with --eval-compress: eval_compress %q, stderr %q does not say it goes unused", sum.EvalCompress, one)
	}
}
