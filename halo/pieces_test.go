package halo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/tensor"
)

// wholeOnly hides a codec's pieces (compress.Caps.Pieces), so that the
// exchange encodes and decodes its messages whole.
type wholeOnly struct{ compress.Compressor }

func (w wholeOnly) Caps() compress.Caps {
	c := w.Compressor.Caps()
	c.Pieces = nil
	return c
}

// counted counts the messages a codec encodes and decodes in pieces.
type counted struct {
	compress.Compressor
	enc, dec *int
}

func (c counted) Caps() compress.Caps {
	caps := c.Compressor.Caps()
	caps.Pieces = c
	return caps
}

func (c counted) EncodePieces(dst []byte, rows, width int, ratio float64, key compress.Key, fill func(lo, hi int, buf []float32)) []byte {
	*c.enc++
	return c.Compressor.Caps().Pieces.EncodePieces(dst, rows, width, ratio, key, fill)
}

func (c counted) DecodePieces(rows, width int, ratio float64, key compress.Key, src []byte, put func(lo, hi int, rows []float32)) error {
	*c.dec++
	return c.Compressor.Caps().Pieces.DecodePieces(rows, width, ratio, key, src, put)
}

// A codec that goes in pieces gives the exchange the same halo rows, owned
// rows' gradients and bytes as the same codec encoded and decoded whole,
// step after step (its stream state moving on alike), forward and
// backward, the halo rows' gradient made whole or a piece at a time as
// the codec asks for it; at width 300 a message is several pieces. Every
// forward message is encoded in pieces, and every backward one decoded
// so, and encoded so where the layer makes the gradient as asked.
func TestExchangePiecesMatchWhole(t *testing.T) {
	const n, k, layers, steps = 400, 3, 2, 3
	_, l := testLayout(t, n, k, 6)
	type result struct {
		ext, dh  [][]float32
		bytes    int64
		pieces   int
		enc, dec int
	}
	for _, name := range []string{"delta:2:0:0", "entropy:delta:2:0:0", "delta:4:0.1:2", "delta:32:0:0"} {
		for _, w := range []int{5, 300} {
			for _, bf16 := range []bool{false, true} {
				run := func(whole, filled bool) ([]result, error) {
					res := make([]result, k)
					err := comm.Run(k, func(c comm.Communicator) error {
						p := &l.Parts[c.Rank()]
						codec, err := compress.New(name)
						if err != nil {
							return err
						}
						res := &res[c.Rank()]
						if whole {
							codec = wholeOnly{codec}
						} else {
							codec = counted{codec, &res.enc, &res.dec}
						}
						e, err := New(c, p, Config{Codec: codec, Seed: 3, Layers: layers, CompressLast: true, BF16: bf16})
						if err != nil {
							return err
						}
						r := rand.New(rand.NewPCG(uint64(c.Rank()), 11))
						h := randomRows(r, len(p.Owned), w)
						for step := range steps {
							for i := range h.Data {
								h.Data[i] += 0.1 * float32(r.NormFloat64())
							}
							e.Begin(step, true)
							for layer := range layers {
								ext := tensor.New(len(p.Owned)+len(p.Halo), w)
								e.Forward(layer, h, ext)
								g := randomRows(r, ext.Rows, w)
								dext, dh := g.Clone(), tensor.New(h.Rows, w)
								var fill func(lo, hi int, out *tensor.Matrix)
								if filled {
									clear(dext.Data[h.Rows*w:])
									fill = func(lo, hi int, out *tensor.Matrix) {
										copy(out.Data, g.Data[(h.Rows+lo)*w:(h.Rows+hi)*w])
										res.pieces++
									}
								}
								e.Backward(layer, dext, dh, fill)
								if e.Err() != nil {
									return e.Err()
								}
								res.ext = append(res.ext, ext.Data)
								res.dh = append(res.dh, dh.Data)
							}
						}
						st := c.Stats()
						for _, site := range st.Sites() {
							res.bytes += st.Site(site).BytesSent
						}
						return nil
					})
					return res, err
				}
				for _, filled := range []bool{false, true} {
					what := fmt.Sprintf("%s, width %d, bf16 %v, fill %v", name, w, bf16, filled)
					want, err := run(true, filled)
					if err != nil {
						t.Fatalf("%s, whole: %v", what, err)
					}
					got, err := run(false, filled)
					if err != nil {
						t.Fatalf("%s, in pieces: %v", what, err)
					}
					for rank := range k {
						for i := range want[rank].ext {
							if !slices.Equal(bitsOf(want[rank].ext[i]), bitsOf(got[rank].ext[i])) || !slices.Equal(bitsOf(want[rank].dh[i]), bitsOf(got[rank].dh[i])) {
								t.Fatalf("%s: rank %d, pass %d: in pieces differs from whole", what, rank, i)
							}
						}
						if msgs := steps * layers * (k - 1); got[rank].dec != msgs || filled && got[rank].enc != 2*msgs || !filled && got[rank].enc != msgs {
							t.Fatalf("%s: rank %d encoded %d messages and decoded %d in pieces of %d each way", what, rank, got[rank].enc, got[rank].dec, msgs)
						}
						if want[rank].bytes != got[rank].bytes {
							t.Fatalf("%s: rank %d sent %d bytes in pieces, %d whole", what, rank, got[rank].bytes, want[rank].bytes)
						}
						// Whole, the gradient is made at once, one piece a
						// layer and step; in pieces, at width 300, more.
						if filled && w == 300 && got[rank].pieces <= want[rank].pieces {
							t.Fatalf("%s: rank %d made the gradient in %d pieces, %d whole", what, rank, got[rank].pieces, want[rank].pieces)
						}
					}
				}
			}
		}
	}
}

func bitsOf(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}
