package gradcomp

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
)

// topK sends the k largest magnitudes of each parameter's gradient (k a
// fraction of the parameter's size, at least 1) as index and value pairs;
// every worker adds all workers' pairs in rank order. With error feedback
// the values not sent stay in the residual and join the next gradient.
// With Options.Momentum (Deep Gradient Compression's momentum correction
// and momentum factor masking) the worker accumulates u = m·u + g and
// v = v + u, sends the top-k of v, and clears the sent entries of u and v.
// Scaled, it ranks each value by its magnitude over the root mean square
// of the worker's recent gradients at that coordinate (an exponential
// moving average of their squares, with Adam's β₂ and bias correction),
// and sends the chosen values themselves.
type topK struct {
	fraction float64
	feedback bool
	momentum float64
	scaled   bool

	shapes   []Shape
	k        []int     // per parameter
	residual []float32 // v: what was not sent yet
	velocity []float32 // u, with momentum
	sq       []float32 // scaled: the average of the squared gradients
	steps    []float32 // scaled: one value, the steps that average has seen
	keys     []uint32
	scratch  []uint32 // keys, reordered by the selection
	msg      []byte
	send     [][]byte
	recv     [][]byte
}

func init() {
	Register("topk", func(arg string, f Flags, o Options) (Method, error) {
		fr, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(fr > 0 && fr <= 1) {
			return nil, fmt.Errorf("topk:FRACTION needs a fraction in (0, 1], not %q", arg)
		}
		if o.Momentum < 0 || o.Momentum >= 1 {
			return nil, fmt.Errorf("momentum %v; want [0, 1)", o.Momentum)
		}
		t := &topK{fraction: fr, feedback: f.Feedback, scaled: f.Scaled}
		if f.Feedback { // the correction accumulates what is not sent
			t.momentum = o.Momentum
		}
		return t, nil
	})
}

func (t *topK) String() string {
	s := "topk:" + strconv.FormatFloat(t.fraction, 'g', -1, 64)
	if t.scaled {
		s += ",scaled"
	}
	if !t.feedback {
		s += ",noef"
	}
	return s
}

// Momentum is the momentum the method accumulates (0 for none): the
// optimiser must then step without its own.
func (t *topK) Momentum() float64 { return t.momentum }

// DelaysGradients is true with error feedback: a coordinate's unsent
// gradient arrives later, summed with its later ones, and the optimiser
// should spread it over the steps it missed (see IsDelayed).
func (t *topK) DelaysGradients() bool { return t.feedback }

func (t *topK) Init(shapes []Shape, workers int) error {
	t.shapes = slices.Clone(shapes)
	t.k = make([]int, len(shapes))
	for i, s := range shapes {
		t.k[i] = min(max(int(math.Ceil(t.fraction*float64(s.Size()))), 1), s.Size())
	}
	n := paramSize(shapes)
	t.residual = make([]float32, n)
	if t.momentum > 0 {
		t.velocity = make([]float32, n)
	}
	if t.scaled {
		t.sq, t.steps = make([]float32, n), make([]float32, 1)
	}
	t.send, t.recv = make([][]byte, workers), make([][]byte, workers)
	return nil
}

func (t *topK) State() []Tensor {
	var s []Tensor
	if t.feedback {
		s = append(s, Tensor{"residual", t.residual})
	}
	if t.momentum > 0 {
		s = append(s, Tensor{"velocity", t.velocity})
	}
	if t.scaled {
		s = append(s, Tensor{"gradsq", t.sq}, Tensor{"gradsq-steps", t.steps})
	}
	return s
}

func (t *topK) Restore(s []Tensor) error { return restoreInto(t.State(), s) }

// msgBytes is the length of every worker's message: the exact tail, then
// (index, value) pairs.
func (t *topK) msgBytes(tail int) int {
	n := 4 * tail
	for _, k := range t.k {
		n += 8 * k
	}
	return n
}

func (t *topK) Reduce(c comm.Communicator, site string, g []float32) error {
	np := len(t.residual)
	if err := checkLen("topk", len(g), np); err != nil {
		return err
	}
	if len(t.send) != c.Size() {
		return fmt.Errorf("gradcomp: topk initialised for %d workers, reducing over %d", len(t.send), c.Size())
	}
	t.averageSquares(g[:np])
	v := t.accumulate(g[:np])
	msg := compress.AppendFloats(t.msg[:0], g[np:])
	off := 0
	for i, s := range t.shapes {
		msg = t.pick(msg, v, off, s.Size(), t.k[i])
		off += s.Size()
	}
	t.msg = msg
	if err := allGather(c, site, msg, t.send, t.recv, t.msgBytes(len(g)-np)); err != nil {
		return err
	}
	clear(g)
	tail := 4 * (len(g) - np)
	for _, b := range t.recv {
		addFloats(g[np:], b)
		for b = b[tail:]; len(b) > 0; b = b[8:] {
			i := binary.LittleEndian.Uint32(b)
			if int(i) >= np {
				return fmt.Errorf("gradcomp: topk: index %d of %d parameter values", i, np)
			}
			g[i] += math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		}
	}
	return nil
}

// accumulate returns the values to select from: the gradient plus the
// residual (with momentum, the accumulated velocity), or the gradient
// itself without error feedback.
func (t *topK) accumulate(g []float32) []float32 {
	if !t.feedback {
		return g
	}
	v := t.residual
	if t.momentum > 0 {
		u, m := t.velocity, float32(t.momentum)
		for i, x := range g {
			u[i] = m*u[i] + x
			v[i] += u[i]
		}
		return v
	}
	for i, x := range g {
		v[i] += x
	}
	return v
}

// Adam's β₂ and ε, for the scaled ranking.
const (
	scaledBeta2 = 0.999
	scaledEps   = 1e-8
)

// averageSquares updates the scaled ranking's moving average of the
// squared gradient g, and its step count. The average is state the rest
// of the run ranks by, so it stays finite: a non-finite entry (NaN, ±∞)
// adds nothing to it, as a zero would, and a square too large for
// float32 saturates at the largest float32. The entry itself is still
// ranked (above every finite one) and sent, and the trainer stops at the
// first non-finite loss it causes; refusing here, on the one worker that
// sees it, would leave the others waiting in the exchange.
func (t *topK) averageSquares(g []float32) {
	if !t.scaled {
		return
	}
	t.steps[0]++
	b := float32(scaledBeta2)
	for i, x := range g {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			t.sq[i] *= b
			continue
		}
		t.sq[i] = min(b*t.sq[i]+(1-b)*x*x, math.MaxFloat32)
	}
}

// rankKeys sets t.keys to the ranking keys of x = v[off:off+len(x)],
// larger first: the bits of |x| (which order as the magnitudes do, NaNs
// above ∞), or scaled, of |x| / (√(sq / (1 − β₂^steps)) + ε).
func (t *topK) rankKeys(x []float32, off int) {
	keys := t.keys[:0]
	if !t.scaled {
		for _, f := range x {
			keys = append(keys, math.Float32bits(f)&0x7fffffff)
		}
		t.keys = keys
		return
	}
	c := 1 - math.Pow(scaledBeta2, float64(t.steps[0]))
	sq := t.sq[off : off+len(x)]
	for i, f := range x {
		d := float32(math.Sqrt(float64(sq[i])/c)) + scaledEps
		keys = append(keys, math.Float32bits(f/d)&0x7fffffff)
	}
	t.keys = keys
}

// pick appends the k entries of v[off:off+n] that rank highest (ties
// to the lower index), in index order, and clears them in the residual
// (and velocity).
func (t *topK) pick(msg []byte, v []float32, off, n, k int) []byte {
	x := v[off : off+n]
	t.rankKeys(x, off)
	keys := t.keys
	t.scratch = append(t.scratch[:0], keys...)
	thr := kthLargest(t.scratch, k)
	above := 0
	for _, key := range keys {
		if key > thr {
			above++
		}
	}
	ties := k - above
	for i, key := range keys {
		if key < thr || key == thr && ties == 0 {
			continue
		}
		if key == thr {
			ties--
		}
		msg = binary.LittleEndian.AppendUint32(msg, uint32(off+i))
		msg = binary.LittleEndian.AppendUint32(msg, math.Float32bits(x[i]))
		if t.feedback {
			x[i] = 0
			if t.velocity != nil {
				t.velocity[off+i] = 0
			}
		}
	}
	return msg
}

// kthLargest returns the k-th largest of keys (1 ≤ k ≤ len(keys)),
// reordering them: quickselect with a median-of-three pivot.
func kthLargest(keys []uint32, k int) uint32 {
	lo, hi, want := 0, len(keys)-1, k-1 // want: place in descending order
	for lo < hi {
		mid := lo + (hi-lo)/2
		a, b, c := keys[lo], keys[mid], keys[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for keys[i] > pivot {
				i++
			}
			for keys[j] < pivot {
				j--
			}
			if i <= j {
				keys[i], keys[j] = keys[j], keys[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return keys[want]
		}
	}
	return keys[want]
}
