package halo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/tensor"
)

// With Config.EvalCodec the evaluation passes of every layer, the last
// included, go through it: each halo row within the quantiser's step of
// the owner's row, in fewer bytes than whole rows; EvaluateExactly brings
// back the whole rows bit for bit, and training passes are not touched.
func TestExchangeEvalCodec(t *testing.T) {
	const n, k, w, layers = 120, 4, 16, 2
	_, l := testLayout(t, n, k, 3)
	global := randomRows(rand.New(rand.NewPCG(5, 9)), n, w)
	for _, atBF16 := range []bool{false, true} {
		t.Run(fmt.Sprintf("bf16=%v", atBF16), func(t *testing.T) {
			want := global
			if atBF16 { // the layers hold bf16 values
				want = global.Clone()
				for i, v := range want.Data {
					want.Data[i] = bf16.ToFloat32(bf16.FromFloat32(v))
				}
			}
			transports(t, k, func(c comm.Communicator) error {
				p := &l.Parts[c.Rank()]
				q8, _ := compress.New("quant8")
				e, err := New(c, p, Config{EvalCodec: q8, Seed: 1, Layers: layers, BF16: atBF16})
				if err != nil {
					return err
				}
				h := tensor.New(len(p.Owned), w)
				for i, v := range p.Owned {
					copy(h.Row(i), want.Row(int(v)))
				}
				pass := func(training, exactly bool, layer int) (maxErr float64, exact bool, err error) {
					e.EvaluateExactly(exactly)
					e.Begin(3, training)
					ext := tensor.New(len(p.Owned)+len(p.Halo), w)
					e.Forward(layer, h, ext)
					if e.Err() != nil {
						return 0, false, e.Err()
					}
					exact = true
					for row := len(p.Owned); row < ext.Rows; row++ {
						src := want.Row(int(p.Global(int32(row))))
						lo, hi := slices.Min(src), slices.Max(src)
						step := float64(hi-lo) / 255
						if atBF16 {
							step += float64(max(-lo, hi)) / 128 // the decoded rows are rounded to bf16
						}
						for j, v := range ext.Row(row) {
							d := math.Abs(float64(v - src[j]))
							exact = exact && d == 0
							maxErr = max(maxErr, d/step)
						}
					}
					return maxErr, exact, nil
				}
				for layer := range layers {
					sent := c.Stats().Site(EvalSites + fmt.Sprint(layer)).BytesSent
					rel, exact, err := pass(false, false, layer)
					switch {
					case err != nil:
						return err
					case exact || rel > 1:
						return fmt.Errorf("evaluation, layer %d: exact %v, largest error %.3g steps of the quantiser", layer, exact, rel)
					}
					whole := 0
					for q, rows := range p.Send {
						if q != p.ID {
							whole += 4 * w * len(rows)
						}
					}
					if coded := c.Stats().Site(EvalSites+fmt.Sprint(layer)).BytesSent - sent; whole > 0 && coded*2 > int64(whole) {
						return fmt.Errorf("evaluation, layer %d: %d bytes through quant8, whole rows are %d", layer, coded, whole)
					}
					if _, exact, err = pass(false, true, layer); err != nil || !exact {
						return fmt.Errorf("evaluation exactly, layer %d: exact %v, error %v", layer, exact, err)
					}
				}
				if _, exact, err := pass(true, false, 0); err != nil || !exact {
					return fmt.Errorf("training pass without a codec: exact %v, error %v", exact, err)
				}
				return nil
			}, nil)
		})
	}
}

// A codec that keeps state between messages, or columns for a backward
// pass, cannot compress evaluation passes, which come and go between
// training steps; New says so.
func TestExchangeRefusesStatefulEvalCodec(t *testing.T) {
	_, l := testLayout(t, 40, 2, 1)
	for _, spec := range []string{"delta:2:0:0", "entropy:delta:2:0:0", "topk"} {
		codec, err := compress.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		err = comm.Run(2, func(c comm.Communicator) error {
			_, err := New(c, &l.Parts[c.Rank()], Config{EvalCodec: codec, Layers: 2})
			return err
		})
		if err == nil {
			t.Errorf("EvalCodec %s: accepted", spec)
		}
	}
}

// A lossless evaluation codec (entropy:none) delivers the rows exactly,
// so the trainer has nothing to re-evaluate: EvalCompressed says so, as it
// does not for a quantiser. Every codec but none still codes the rows:
// an evaluation pass sends fewer bytes than whole rows.
func TestEvalCompressedOnlyForLossyCodecs(t *testing.T) {
	_, l := testLayout(t, 40, 2, 1)
	for _, tc := range []struct {
		spec  string
		lossy bool
	}{{"quant8", true}, {"entropy:quant8", true}, {"bf16", true}, {"entropy:none", false}, {"none", false}} {
		err := comm.Run(2, func(c comm.Communicator) error {
			codec, err := compress.New(tc.spec) // one a worker: a codec keeps scratch space
			if err != nil {
				return err
			}
			e, err := New(c, &l.Parts[c.Rank()], Config{EvalCodec: codec, Layers: 2})
			if err != nil {
				return err
			}
			if got := e.EvalCompressed(); got != tc.lossy {
				return fmt.Errorf("EvalCodec %s: EvalCompressed %v, want %v", tc.spec, got, tc.lossy)
			}
			p := &l.Parts[c.Rank()]
			const w = 16
			h := tensor.New(len(p.Owned), w)
			for i := 0; i < len(h.Data); i += 5 {
				h.Data[i] = 1 // mostly zeros, as ReLU's activations are: compressible
			}
			sent := c.Stats().Site(EvalSites + "0").BytesSent
			e.Begin(1, false)
			e.Forward(0, h, tensor.New(len(p.Owned)+len(p.Halo), w))
			if e.Err() != nil {
				return e.Err()
			}
			whole := 0
			for q, rows := range p.Send {
				if q != p.ID {
					whole += 4 * w * len(rows)
				}
			}
			coded := c.Stats().Site(EvalSites+"0").BytesSent - sent
			if tc.spec != "none" && whole > 0 && coded >= int64(whole) {
				return fmt.Errorf("EvalCodec %s: an evaluation pass sent %d bytes, whole rows are %d", tc.spec, coded, whole)
			}
			e.EvaluateExactly(true)
			if e.EvalCompressed() {
				return fmt.Errorf("EvalCodec %s: EvalCompressed while evaluating exactly", tc.spec)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}
