package halo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// ownedBF16 returns part p's rows of global, and an extension with room
// for its halo rows, both in bf16.
func ownedBF16(p *partition.Part, global *tensor.MatrixBF16) *tensor.MatrixBF16 {
	ext := &tensor.MatrixBF16{Rows: len(p.Owned) + len(p.Halo), Cols: global.Cols, Data: make([]uint16, (len(p.Owned)+len(p.Halo))*global.Cols)}
	copy(ext.Data, global.SelectRows(p.Owned).Data)
	return ext
}

// With Config.BF16 the rows that would go as they are go in bf16: held in
// bf16 (ForwardBF16) or in float32 holding bf16 values (Forward), every
// worker's extended rows are exactly the global rows of its owned and halo
// nodes, training and evaluation passes alike, and a training pass sends
// half the bytes a float32 exchange sends; in every way the exchange can
// move rows (transports).
func TestExchangeBF16DeliversHaloRows(t *testing.T) {
	const n, k, w = 120, 4, 5
	_, l := testLayout(t, n, k, 3)
	global16 := tensor.MatrixToBF16(randomRows(rand.New(rand.NewPCG(1, 2)), n, w))
	global := global16.Widen()
	sent := make([][2]int64, k) // per rank: float32 and bf16 forward bytes of one training pass
	transports(t, k, func(c comm.Communicator) error {
		p := &l.Parts[c.Rank()]
		e32, err := New(c, p, Config{Seed: 1, Layers: 2})
		if err != nil {
			return err
		}
		site := ForwardSites + "0"
		before := c.Stats().Site(site).BytesSent
		if _, _, err := forwardOwned(e32, p, global); err != nil {
			return err
		}
		mid := c.Stats().Site(site).BytesSent
		e, err := New(c, p, Config{Seed: 1, Layers: 2, BF16: true})
		if err != nil {
			return err
		}
		for _, training := range []bool{true, false} {
			e.Begin(0, training)
			ext16 := ownedBF16(p, global16)
			e.ForwardBF16(0, ext16, len(p.Owned))
			if training {
				sent[c.Rank()] = [2]int64{mid - before, c.Stats().Site(site).BytesSent - mid}
			}
			_, ext, err := forwardOwned(e, p, global) // Forward of float32 rows holding bf16 values
			if err != nil {
				return err
			}
			if err := e.Err(); err != nil {
				return err
			}
			for col := range ext.Rows {
				v := int(p.Global(int32(col)))
				if got, want := ext16.Data[col*w:(col+1)*w], global16.Data[v*w:(v+1)*w]; !slices.Equal(got, want) {
					return fmt.Errorf("rank %d, training %v: bf16 source %d (node %d) is %v, want %v", c.Rank(), training, col, v, got, want)
				}
				if got, want := ext.Row(col), global.Row(v); !slices.Equal(got, want) {
					return fmt.Errorf("rank %d, training %v: float32 source %d (node %d) is %v, want %v", c.Rank(), training, col, v, got, want)
				}
			}
		}
		return nil
	}, func() error {
		for r, s := range sent {
			if s[0] == 0 || 2*s[1] != s[0] {
				return fmt.Errorf("rank %d sent %d bytes of bf16 rows, %d of float32 rows", r, s[1], s[0])
			}
		}
		return nil
	})
}

// A codec compresses bf16 rows widened to float32, as it compresses
// float32 rows, and the rows it decodes are stored rounded to bf16: the
// halo rows are the float32 exchange's rounded, bit for bit, whether the
// rows are held in bf16 (ForwardBF16, GCN and GraphSAGE) or in float32
// holding bf16 values (Forward, GAT).
func TestExchangeBF16CompressesWidenedRows(t *testing.T) {
	const n, k, w = 150, 3, 8
	_, l := testLayout(t, n, k, 5)
	global16 := tensor.MatrixToBF16(randomRows(rand.New(rand.NewPCG(3, 4)), n, w))
	global := global16.Widen()
	for _, name := range []string{"quant4", "truncate", "topk", "delta:2:0:0"} {
		t.Run(name, func(t *testing.T) {
			transports(t, k, func(c comm.Communicator) error {
				p := &l.Parts[c.Rank()]
				exchange := func(bf16 bool) (*Exchange, error) {
					codec, err := compress.New(name)
					if err != nil {
						return nil, err
					}
					return New(c, p, Config{Seed: 1, Layers: 2, Codec: codec, Schedule: compress.Fixed(2), BF16: bf16})
				}
				e32, err := exchange(false)
				if err != nil {
					return err
				}
				_, ext, err := forwardOwned(e32, p, global)
				if err != nil {
					return err
				}
				e16, err := exchange(true)
				if err != nil {
					return err
				}
				e16.Begin(0, true)
				ext16 := ownedBF16(p, global16)
				e16.ForwardBF16(0, ext16, len(p.Owned))
				if err := e16.Err(); err != nil {
					return err
				}
				want := tensor.MatrixToBF16(ext)
				if !slices.Equal(ext16.Data, want.Data) {
					return fmt.Errorf("rank %d: the bf16 halo rows are not the float32 exchange's rounded", c.Rank())
				}
				e16f, err := exchange(true)
				if err != nil {
					return err
				}
				_, ext16f, err := forwardOwned(e16f, p, global)
				if err != nil {
					return err
				}
				if !slices.Equal(ext16f.Data, want.Widen().Data) {
					return fmt.Errorf("rank %d: the float32 rows a codec decodes at bf16 are not the float32 exchange's rounded", c.Rank())
				}
				if slices.Equal(ext.Data, ownedBF16Widened(p, global16)) {
					return fmt.Errorf("rank %d: the codec changed nothing", c.Rank())
				}
				return nil
			}, nil)
		})
	}
}

// ownedBF16Widened is the exact extended rows of part p, widened.
func ownedBF16Widened(p *partition.Part, global16 *tensor.MatrixBF16) []float32 {
	ids := append(slices.Clone(p.Owned), p.Halo...)
	return global16.SelectRows(ids).Widen().Data
}

// With Config.BF16, entropy:none codes the forward rows' bf16 values (two
// bytes each) rather than their float32 widening: the halo rows are the
// exact ones, as without a codec, and a training pass sends no more bytes
// than the uncompressed bf16 exchange (plus each message's few bytes of
// framing), where coding the widened float32s sent more.
func TestExchangeBF16EntropyCodesHalves(t *testing.T) {
	const n, k, w = 150, 3, 16
	_, l := testLayout(t, n, k, 5)
	global16 := tensor.MatrixToBF16(randomRows(rand.New(rand.NewPCG(5, 6)), n, w))
	sent := make([][2]int64, k) // per rank: forward bytes uncompressed and with entropy:none
	transports(t, k, func(c comm.Communicator) error {
		p := &l.Parts[c.Rank()]
		site := ForwardSites + "0"
		for i, name := range []string{"none", "entropy"} {
			codec, err := compress.New(name)
			if err != nil {
				return err
			}
			e, err := New(c, p, Config{Seed: 1, Layers: 2, Codec: codec, BF16: true})
			if err != nil {
				return err
			}
			before := c.Stats().Site(site).BytesSent
			e.Begin(0, true)
			ext16 := ownedBF16(p, global16)
			e.ForwardBF16(0, ext16, len(p.Owned))
			if err := e.Err(); err != nil {
				return err
			}
			sent[c.Rank()][i] = c.Stats().Site(site).BytesSent - before
			ids := append(slices.Clone(p.Owned), p.Halo...)
			if want := global16.SelectRows(ids).Data; !slices.Equal(ext16.Data, want) {
				return fmt.Errorf("rank %d, %s: the halo rows are not the exact bf16 rows", c.Rank(), name)
			}
		}
		return nil
	}, func() error {
		for r, s := range sent {
			if peers := int64(k - 1); s[0] == 0 || s[1] > s[0]+16*peers {
				return fmt.Errorf("rank %d sent %d bytes with entropy:none, %d uncompressed", r, s[1], s[0])
			}
		}
		return nil
	})
}

// With Config.BF16 the exchange tells a codec that keeps state per stream
// so (compress.Streaming's SetBF16): delta coding, entropy-coded or not,
// keeps its reconstructions in bf16, and at float32 in float32.
func TestExchangeBF16TellsTheStreamingCodec(t *testing.T) {
	_, l := testLayout(t, 60, 2, 5)
	for _, name := range []string{"delta:2:0:0", "entropy:delta:2:0:0"} {
		for _, bf16 := range []bool{false, true} {
			transports(t, 2, func(c comm.Communicator) error {
				codec, err := compress.New(name)
				if err != nil {
					return err
				}
				codec.Caps().Streaming.SetBF16(!bf16) // New sets it either way
				if _, err := New(c, &l.Parts[c.Rank()], Config{Seed: 1, Layers: 2, Codec: codec, BF16: bf16}); err != nil {
					return err
				}
				if d := codec.Caps().Streaming.(*compress.Delta); d.BF16 != bf16 {
					return fmt.Errorf("%s with Config.BF16 %v: the codec's BF16 is %v", name, bf16, d.BF16)
				}
				return nil
			}, nil)
		}
	}
}
