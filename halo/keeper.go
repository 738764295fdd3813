package halo

import (
	"fmt"

	"github.com/graft-gnn/graft/compress"
)

// keeper wraps a codec that sends a gradient at the columns its forward
// message kept (compress.GradCoder). It keeps the columns of every forward
// message a worker sends and receives, per layer, taken from each piece of
// a message while it is in cache, and encodes and decodes the backward
// messages at them: to the exchange it is a compressor like any other,
// with three hooks that bracket the passes.
//
// Backward messages are encoded and decoded in pieces of ascending rows,
// each message once per step, so a cursor per peer says which rows' columns
// the next piece takes.
type keeper struct {
	compress.Compressor
	grad   compress.GradCoder
	rows   compress.RowCoder // decode in pieces when set
	plan   *plan
	layers []keptLayer
	err    error // a forward message's columns could not be taken
}

type keptLayer struct {
	step int // the step whose forward columns are all kept; -1 until then
	// sent[q] and recv[q] are the columns of the messages sent to and
	// received from peer q; with shared rows, those of the boundary rows'
	// one encoding are in boundary until the backward pass picks each
	// peer's from them.
	sent, recv [][]byte
	boundary   []byte
	// encodeAt[q] and decodeAt[q] count the rows of the backward messages
	// to and from q encoded and decoded so far in this pass.
	encodeAt, decodeAt []int
}

func newKeeper(codec compress.Compressor, p *plan, layers int) *keeper {
	caps := codec.Caps()
	kp := &keeper{Compressor: codec, grad: caps.Grad, rows: caps.Rows, plan: p, layers: make([]keptLayer, layers)}
	for l := range kp.layers {
		kp.layers[l] = keptLayer{step: -1, sent: make([][]byte, p.peers), recv: make([][]byte, p.peers),
			encodeAt: make([]int, p.peers), decodeAt: make([]int, p.peers)}
	}
	return kp
}

// beginForward forgets layer's columns: its forward pass keeps them anew.
func (kp *keeper) beginForward(layer int) {
	k := &kp.layers[layer]
	k.step = -1
	k.boundary = k.boundary[:0]
	for q := range k.sent {
		k.sent[q], k.recv[q] = k.sent[q][:0], k.recv[q][:0]
	}
}

// endForward marks layer's columns as those of step's forward pass.
func (kp *keeper) endForward(layer, step int) { kp.layers[layer].step = step }

// beginBackward readies layer's columns for the backward pass of step:
// they must be that step's forward columns.
func (kp *keeper) beginBackward(layer, step int) error {
	k := &kp.layers[layer]
	if k.step != step {
		return ErrStale
	}
	p := kp.plan
	if p.sendAt != nil && len(p.boundary) > 0 { // shared rows: each peer's columns from the boundary's
		cb := len(k.boundary) / len(p.boundary)
		for q, at := range p.sendAt {
			k.sent[q] = k.sent[q][:0]
			for _, i := range at {
				k.sent[q] = append(k.sent[q], k.boundary[int(i)*cb:(int(i)+1)*cb]...)
			}
		}
	}
	for q := range k.sent {
		if q == p.me {
			continue
		}
		lo, hi := p.haloRows(q)
		for _, m := range []struct {
			cols []byte
			rows int
		}{{k.sent[q], len(p.send[q])}, {k.recv[q], hi - lo}} {
			if m.rows > 0 && len(m.cols)%m.rows != 0 {
				return fmt.Errorf("%d bytes of forward columns for %d rows of peer %d", len(m.cols), m.rows, q)
			}
		}
		k.encodeAt[q], k.decodeAt[q] = 0, 0
	}
	return nil
}

// columnsOf returns the columns of rows [at, at+n) of a message of total
// rows whose columns are cols.
func columnsOf(cols []byte, total, at, n int) []byte {
	cb := len(cols) / max(total, 1)
	return cols[at*cb : (at+n)*cb]
}

func (kp *keeper) Encode(dst []byte, x []float32, rows, width int, ratio float64, key compress.Key) []byte {
	k := &kp.layers[key.Layer]
	if key.Backward { // answers the forward message key.From → me
		q := key.From
		lo, hi := kp.plan.haloRows(q)
		at := k.encodeAt[q]
		k.encodeAt[q] += rows
		return kp.grad.EncodeGrad(dst, x, rows, width, ratio, columnsOf(k.recv[q], hi-lo, at, rows))
	}
	start := len(dst)
	dst = kp.Compressor.Encode(dst, x, rows, width, ratio, key)
	into := &k.sent[key.To]
	if key.To == key.From { // the boundary rows' one encoding
		into = &k.boundary
	}
	var err error
	if *into, err = kp.grad.Columns(*into, dst[start:], rows, width, ratio); err != nil && kp.err == nil {
		kp.err = fmt.Errorf("halo rows to rank %d, layer %d: %w", key.To, key.Layer, err)
	}
	return dst
}

func (kp *keeper) Decode(out []float32, rows, width int, ratio float64, key compress.Key, msg []byte) error {
	k := &kp.layers[key.Layer]
	if key.Backward { // the gradient of the forward message me → key.To
		q := key.To
		at := k.decodeAt[q]
		k.decodeAt[q] += rows
		return kp.grad.DecodeGrad(out, rows, width, ratio, columnsOf(k.sent[q], len(kp.plan.send[q]), at, rows), msg)
	}
	q := key.From
	if kp.rows == nil {
		if err := kp.Compressor.Decode(out, rows, width, ratio, key, msg); err != nil {
			return err
		}
		var err error
		k.recv[q], err = kp.grad.Columns(k.recv[q], msg, rows, width, ratio)
		return err
	}
	// A message of fixed-size rows is decoded a cache-sized piece at a
	// time, its columns taken from each piece while it is in cache.
	rb := kp.rows.RowBytes(width, ratio)
	if len(msg) != rows*rb {
		return fmt.Errorf("message of %d bytes, want %d rows of %d", len(msg), rows, rb)
	}
	chunk := max(1, rowChunk/max(width, 1))
	for a := 0; a < rows; a += chunk {
		b := min(a+chunk, rows)
		piece := msg[a*rb : b*rb]
		if err := kp.Compressor.Decode(out[a*width:b*width], b-a, width, ratio, key, piece); err != nil {
			return fmt.Errorf("rows [%d, %d) of %d: %w", a, b, rows, err)
		}
		var err error
		if k.recv[q], err = kp.grad.Columns(k.recv[q], piece, b-a, width, ratio); err != nil {
			return err
		}
	}
	return nil
}

// takeErr returns and clears the error of taking a forward message's
// columns.
func (kp *keeper) takeErr() error {
	err := kp.err
	kp.err = nil
	return err
}
