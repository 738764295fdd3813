package gradcomp

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
)

// quantChunk is the number of values that share a minimum and a step.
const quantChunk = 256

// quantizer sends each chunk of quantChunk values as its scale and one
// bits-wide signed code per value, v ≈ code·scale with |code| ≤ 2^(bits−1) − 1
// and scale = max|v| / (2^(bits−1) − 1), rounded to the nearest level: zero
// stays exactly zero, so coordinates without gradient get no update (an
// offset grid would send them rounding noise, which Adam's per-coordinate
// scaling magnifies). With error feedback the rounding error stays in the
// residual, so the stochastic rounding that makes the halo exchange's
// quantisers unbiased is not needed. The error of a value is at most half
// a step. Codes are stored offset by 2^(bits−1) − 1 and packed
// little-endian, value j at bits [j·bits, (j+1)·bits) of its chunk's codes.
type quantizer struct {
	bits     int
	feedback bool

	params   int
	residual []float32
	deq      []float32
	msg      []byte
	send     [][]byte
	recv     [][]byte
}

func init() {
	for _, bits := range []int{8, 4} {
		Register(fmt.Sprintf("quant%d", bits), func(arg string, f Flags, _ Options) (Method, error) {
			if arg != "" {
				return nil, errNoArg
			}
			if f.Scaled {
				return nil, errNoScaled
			}
			return &quantizer{bits: bits, feedback: f.Feedback}, nil
		})
	}
}

func (q *quantizer) String() string {
	s := fmt.Sprintf("quant%d", q.bits)
	if !q.feedback {
		s += ",noef"
	}
	return s
}

func (q *quantizer) Init(shapes []Shape, workers int) error {
	q.params = paramSize(shapes)
	q.residual = make([]float32, q.params)
	q.deq = make([]float32, quantChunk)
	q.send, q.recv = make([][]byte, workers), make([][]byte, workers)
	return nil
}

func (q *quantizer) State() []Tensor {
	if !q.feedback {
		return nil
	}
	return []Tensor{{"residual", q.residual}}
}

func (q *quantizer) Restore(s []Tensor) error { return restoreInto(q.State(), s) }

// chunkBytes is the encoded length of a chunk of n values.
func (q *quantizer) chunkBytes(n int) int { return 4 + (n*q.bits+7)/8 }

// levels is the largest code magnitude.
func (q *quantizer) levels() int { return 1<<(q.bits-1) - 1 }

// codesBytes is the encoded length of n values.
func (q *quantizer) codesBytes(n int) int {
	full := n / quantChunk
	b := full * q.chunkBytes(quantChunk)
	if r := n % quantChunk; r > 0 {
		b += q.chunkBytes(r)
	}
	return b
}

func (q *quantizer) Reduce(c comm.Communicator, site string, g []float32) error {
	np := q.params
	if err := checkLen(q.String(), len(g), np); err != nil {
		return err
	}
	if len(q.send) != c.Size() {
		return fmt.Errorf("gradcomp: %s initialised for %d workers, reducing over %d", q, len(q.send), c.Size())
	}
	x := g[:np]
	if q.feedback {
		for i, v := range x {
			q.residual[i] += v
		}
		x = q.residual
	}
	msg := compress.AppendFloats(q.msg[:0], g[np:])
	for off := 0; off < np; off += quantChunk {
		chunk := x[off:min(off+quantChunk, np)]
		msg = q.encode(msg, chunk)
		if q.feedback { // the residual keeps what the codes missed
			d := q.deq[:len(chunk)]
			if err := q.decode(d, msg[len(msg)-q.chunkBytes(len(chunk)):]); err != nil {
				return err
			}
			for i := range chunk {
				chunk[i] -= d[i]
			}
		}
	}
	q.msg = msg
	tail := len(g) - np
	if err := allGather(c, site, msg, q.send, q.recv, 4*tail+q.codesBytes(np)); err != nil {
		return err
	}
	clear(g)
	for _, b := range q.recv {
		addFloats(g[np:], b)
		b = b[4*tail:]
		for off := 0; off < np; off += quantChunk {
			d := q.deq[:min(quantChunk, np-off)]
			n := q.chunkBytes(len(d))
			if err := q.decode(d, b[:n]); err != nil {
				return err
			}
			for i, v := range d {
				g[off+i] += v
			}
			b = b[n:]
		}
	}
	return nil
}

// encode appends chunk's scale and codes.
func (q *quantizer) encode(msg []byte, chunk []float32) []byte {
	var peak float32
	for _, v := range chunk {
		peak = max(peak, abs32(v))
	}
	top := float32(q.levels())
	step := peak / top
	if !(step > 0 && step <= math.MaxFloat32) { // all zero, or not finite
		step = 0
	}
	msg = binary.LittleEndian.AppendUint32(msg, math.Float32bits(step))
	start := len(msg)
	msg = append(msg, make([]byte, (len(chunk)*q.bits+7)/8)...)
	codes := msg[start:]
	for j, v := range chunk {
		c := float32(0)
		if step > 0 {
			c = min(max(float32(math.Round(float64(v/step))), -top), top)
		}
		pos := j * q.bits
		codes[pos/8] |= byte(uint32(int32(c)+int32(top)) << (pos % 8))
	}
	return msg
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// decode writes the values of one encoded chunk to out, code·step, so that
// every worker gets the same bits.
func (q *quantizer) decode(out []float32, b []byte) error {
	if len(b) != q.chunkBytes(len(out)) {
		return fmt.Errorf("gradcomp: %s: a %d-byte chunk of %d values", q, len(b), len(out))
	}
	step := math.Float32frombits(binary.LittleEndian.Uint32(b))
	codes := b[4:]
	mask := byte(1)<<q.bits - 1
	top := q.levels()
	for j := range out {
		pos := j * q.bits
		c := int(codes[pos/8]>>(pos%8)&mask) - top
		out[j] = float32(c) * step
	}
	return nil
}
