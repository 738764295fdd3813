package fullgraph

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/graft-gnn/graft/internal/cpuid"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/train"
)

// The golden trajectories pin training to the bit: per-epoch losses,
// metrics and halo bytes, and a hash of the final parameters, for GCN, SAGE
// and GAT on the embedded Cora at 1 and 4 workers, uncompressed and with
// each kind of codec. They were recorded once, before the training core was
// restructured, with
//
//	for l in generic avx2 avx512; do
//		GRAFT_SIMD=$l go test ./train/fullgraph -run TestGoldenTrajectories -update-golden
//	done
//
// once per kernel level (GRAFT_SIMD=generic, avx2 and avx512; the pure-Go
// kernels round differently from the fused multiply-adds of the assembly
// ones), and any change that alters a single bit of any run fails here.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden-LEVEL.json from this build")

type goldenCase struct {
	Name     string `json:"name"`
	Model    string `json:"model"`
	Parts    int    `json:"parts"`
	Codec    string `json:"codec,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	Epochs   int    `json:"epochs"`
	Patience int    `json:"patience,omitempty"`
	ByLoss   bool   `json:"select_by_loss,omitempty"`
}

type goldenEpoch struct {
	Loss     float64 `json:"loss"`
	TrainAcc float64 `json:"train_acc"`
	ValAcc   float64 `json:"val_acc"`
	TestAcc  float64 `json:"test_acc"`
	ValLoss  float64 `json:"val_loss"`
	Ratio    float64 `json:"ratio"`
	BytesFwd int64   `json:"bytes_fwd"`
	BytesBwd int64   `json:"bytes_bwd"`
	Grad     int64   `json:"bytes_grad"`
}

type goldenRun struct {
	Case         goldenCase    `json:"case"`
	Epochs       []goldenEpoch `json:"epochs"`
	BestEpoch    int           `json:"best_epoch"`
	StoppedEarly bool          `json:"stopped_early"`
	Params       string        `json:"params_sha256"`
}

func goldenCases() []goldenCase {
	var cs []goldenCase
	for _, model := range []string{"gcn", "sage", "gat"} {
		for _, parts := range []int{1, 4} {
			cs = append(cs, goldenCase{Name: model + "-" + string(rune('0'+parts)), Model: model, Parts: parts, Epochs: 8})
		}
	}
	return append(cs,
		goldenCase{Name: "sage-4-truncate", Model: "sage", Parts: 4, Codec: "truncate", Schedule: "linear:16:1:2", Epochs: 8},
		goldenCase{Name: "gcn-4-topk", Model: "gcn", Parts: 4, Codec: "topk", Schedule: "linear:16:1.5:2", Epochs: 8},
		goldenCase{Name: "sage-4-quant4", Model: "sage", Parts: 4, Codec: "quant4", Schedule: "fixed:1", Epochs: 8},
		goldenCase{Name: "gat-4-subspace", Model: "gat", Parts: 4, Codec: "subspace", Schedule: "exp:8:1:1", Epochs: 6},
		goldenCase{Name: "gcn-4-bf16-adaptive", Model: "gcn", Parts: 4, Codec: "bf16", Schedule: "adaptive:8:1:1:2", Epochs: 8},
		goldenCase{Name: "gcn-1-patience", Model: "gcn", Parts: 1, Epochs: 300, Patience: 10},
		goldenCase{Name: "gcn-4-loss-patience", Model: "gcn", Parts: 4, Epochs: 300, Patience: 5, ByLoss: true},
	)
}

func runGolden(t *testing.T, c goldenCase) goldenRun {
	t.Helper()
	ds, data := coraData(t)
	cfg := presetConfig(t, c.Model, ds.NumClasses, 7)
	cfg.Epochs, cfg.Patience, cfg.SelectByLoss = c.Epochs, c.Patience, c.ByLoss
	if c.Model == "gat" {
		cfg.Model.Heads = 2
	}
	var layout *partition.Layout
	if c.Parts > 1 {
		parts, err := partition.Random{}.Partition(ds.Graph, c.Parts, partition.Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if layout, err = partition.BuildLayout(ds.Graph, parts, c.Parts); err != nil {
			t.Fatal(err)
		}
	}
	var opts Options
	if c.Codec != "" {
		opts = compressed(t, c.Codec, c.Schedule, c.Epochs)
	}
	run := goldenRun{Case: c}
	p := train.Problem{Graph: ds.Graph, Features: data.Features, Labels: data.Labels, Train: data.Train, Val: data.Val, Test: data.Test}
	res, tr, err := RunInProcess(context.Background(), cfg, p, layout, opts, func(m metrics.Epoch) error {
		run.Epochs = append(run.Epochs, goldenEpoch{Loss: m.Loss, TrainAcc: m.TrainAcc, ValAcc: m.ValAcc, TestAcc: m.TestAcc,
			ValLoss: m.ValLoss, Ratio: m.Ratio, BytesFwd: m.BytesFwd, BytesBwd: m.BytesBwd, Grad: m.BytesGrad})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run.BestEpoch, run.StoppedEarly = res.Best.Epoch, res.StoppedEarly
	h := sha256.New()
	for _, p := range tr.Model().Params() {
		h.Write([]byte(p.Name))
		for _, v := range p.Value.Data {
			h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
		}
	}
	run.Params = hex.EncodeToString(h.Sum(nil))
	return run
}

// "Per-epoch losses of GCN, SAGE and GAT at 1 and 4 workers must equal
// those of the commit before the change."
func TestGoldenTrajectories(t *testing.T) {
	path := filepath.Join("testdata", "golden-"+cpuid.InEffect().String()+".json")
	if *updateGolden {
		var runs []goldenRun
		for _, c := range goldenCases() {
			runs = append(runs, runGolden(t, c))
		}
		b, err := json.MarshalIndent(runs, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []goldenRun
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(goldenCases()) {
		t.Fatalf("%s holds %d runs, the test defines %d", path, len(want), len(goldenCases()))
	}
	for i, c := range goldenCases() {
		t.Run(c.Name, func(t *testing.T) {
			w := want[i]
			if w.Case != c {
				t.Fatalf("recorded case %+v, test case %+v", w.Case, c)
			}
			got := runGolden(t, c)
			if len(got.Epochs) != len(w.Epochs) {
				t.Fatalf("%d epochs, recorded %d", len(got.Epochs), len(w.Epochs))
			}
			for e := range w.Epochs {
				if got.Epochs[e] != w.Epochs[e] {
					t.Fatalf("epoch %d:\n got  %+v\n want %+v", e+1, got.Epochs[e], w.Epochs[e])
				}
			}
			if got.BestEpoch != w.BestEpoch || got.StoppedEarly != w.StoppedEarly || got.Params != w.Params {
				t.Fatalf("best epoch %d, stopped early %v, parameters %s; recorded %d, %v, %s",
					got.BestEpoch, got.StoppedEarly, got.Params, w.BestEpoch, w.StoppedEarly, w.Params)
			}
		})
	}
}
