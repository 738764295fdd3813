package fullgraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
)

// "a resumed run's final parameters equal those of an uninterrupted run bit
// for bit": interrupt after epoch 5 of 12, save through the checkpoint file
// format, resume, and compare with a run that was never interrupted — on
// one worker and on three with compression and an adaptive schedule, and
// with gradient compression, whose residuals and warm-start factors every
// worker keeps, and with delta coding (plain and entropy-coded), whose every worker's
// reconstructions the checkpoint keeps, at bf16 precision too, where they
// are kept in bfloat16.
func TestResumeEqualsUninterruptedRun(t *testing.T) {
	s := newSBMTask(t, 200, 8)
	for _, tc := range []struct {
		k         int
		codec     string
		grad      string
		precision train.Precision
	}{{1, "truncate", "", ""}, {3, "truncate", "", ""}, {3, "truncate", "topk:0.05", ""}, {3, "truncate", "topk:0.05,scaled", ""}, {3, "truncate", "powersgd:2", ""},
		{3, "delta:2:0.05:3", "", ""}, {3, "entropy:delta:2:0.05:3", "", ""}, {3, "entropy:delta:2:0.05:3", "", train.BF16}} {
		k := tc.k
		name := fmt.Sprintf("%d workers, %s %s", k, tc.codec, tc.grad)
		if tc.precision != "" {
			name += " at " + string(tc.precision)
		}
		t.Run(name, func(t *testing.T) {
			cfg := equivalenceConfig("gcn", s.classes)
			cfg.Epochs = 12
			var layout *partition.Layout
			if k > 1 {
				parts, err := partition.Random{}.Partition(s.g, k, partition.Options{Seed: 2})
				if err != nil {
					t.Fatal(err)
				}
				if layout, err = partition.BuildLayout(s.g, parts, k); err != nil {
					t.Fatal(err)
				}
			}
			p := s.problem()
			opts := func() Options {
				o := compressed(t, tc.codec, "adaptive:8:1:1:2", cfg.Epochs)
				o.Precision = tc.precision
				if tc.grad != "" {
					o.Grad = func() (gradcomp.Method, error) { return gradcomp.New(tc.grad, gradcomp.Options{Seed: 3}) }
				}
				return o
			}
			run := func(ctx context.Context, o Options, cancelAt int, cancel func()) ([]float64, [][]float32, error) {
				var losses []float64
				_, tr, err := RunInProcess(ctx, cfg, p, layout, o, func(m metrics.Epoch) error {
					losses = append(losses, m.Loss)
					if m.Epoch == cancelAt {
						cancel()
					}
					return nil
				})
				var params [][]float32
				if tr != nil {
					for _, q := range tr.Model().Params() {
						params = append(params, append([]float32(nil), q.Value.Data...))
					}
				}
				return losses, params, err
			}

			wantLosses, wantParams, err := run(context.Background(), opts(), -1, nil)
			if err != nil {
				t.Fatal(err)
			}

			var saved []byte
			o := opts()
			o.SaveCheckpoint = func(st *checkpoint.State) error {
				var b bytes.Buffer
				err := checkpoint.Encode(&b, st)
				saved = b.Bytes()
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			_, _, err = run(ctx, o, 4, cancel)
			if !errors.Is(err, train.ErrInterrupted) || saved == nil {
				t.Fatalf("interrupted run: %v (checkpoint saved: %v)", err, saved != nil)
			}
			st, err := checkpoint.Decode(saved)
			if err != nil {
				t.Fatal(err)
			}
			if st.Step != 5 {
				t.Fatalf("checkpoint after epoch %d, want 5 (the epoch during which the stop was asked)", st.Step)
			}
			if c := st.Tensor(codecTensorName(k - 1)); tc.precision == train.BF16 && (c == nil || !bytes.HasPrefix(compress.FloatBytes(c.Data), []byte("GRAFTDB1"))) {
				t.Fatalf("the checkpoint lacks the last worker's codec state in bfloat16")
			}
			if tc.grad != "" && st.Tensor(fmt.Sprintf("gradcomp/%d/residual", k-1)) == nil {
				t.Fatalf("the checkpoint lacks the last worker's residual")
			}

			o = opts()
			o.Resume = st
			gotLosses, gotParams, err := run(context.Background(), o, -1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotLosses) != cfg.Epochs-5 {
				t.Fatalf("resumed run ran %d epochs, want %d", len(gotLosses), cfg.Epochs-5)
			}
			for i, l := range gotLosses {
				if l != wantLosses[5+i] {
					t.Fatalf("epoch %d loss %v after resuming, %v uninterrupted", 6+i, l, wantLosses[5+i])
				}
			}
			for i := range wantParams {
				for j := range wantParams[i] {
					if gotParams[i][j] != wantParams[i][j] {
						t.Fatalf("parameter %d[%d] = %v after resuming, %v uninterrupted", i, j, gotParams[i][j], wantParams[i][j])
					}
				}
			}
		})
	}
}

func TestRestoreRefusesAnotherModel(t *testing.T) {
	s := newSBMTask(t, 100, 1)
	cfg := equivalenceConfig("gcn", s.classes)
	cfg.Epochs = 2
	var st *checkpoint.State
	p := s.problem()
	if _, _, err := RunInProcess(context.Background(), cfg, p, nil, Options{CheckpointEvery: 1,
		SaveCheckpoint: func(c *checkpoint.State) error { st = c; return nil }}, nil); err != nil {
		t.Fatal(err)
	}
	cfg.Model.Hidden++
	_, _, err := RunInProcess(context.Background(), cfg, p, nil, Options{Resume: st}, nil)
	if err == nil {
		t.Fatal("a checkpoint of another model was accepted")
	}
}
