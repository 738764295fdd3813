package halo

import (
	"fmt"
	"unsafe"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// Backward sends the halo rows' gradients in dext to their owners and
// writes into dh the owned rows' gradient plus what the peers returned. dh
// may be the first rows of dext, as the layers pass it.
//
// When fill is not nil, dext's halo rows are not written yet: fill(lo, hi,
// out) writes the gradient of halo rows [lo, hi) (0 is the first row after
// the owned ones) into out, of hi−lo rows, and Backward calls it for every
// halo row once. Where a codec encodes the gradient a piece of rows at a
// time, fill writes a cache-sized piece, encoded before the next is made,
// so the halo rows' gradient (most of the rows on a fine partition) never
// goes to memory; in the in-process group an uncompressed pass has the
// peers call fill for the rows they read, a piece at a time, on their own
// goroutines (PullsGradients), and dext needs only the owned rows;
// elsewhere fill writes them all into dext.
func (e *Exchange) Backward(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix)) {
	w, own := dh.Cols, dh.Rows
	if own*w > 0 && &dh.Data[0] != &dext.Data[0] {
		copy(dh.Data, dext.Data[:own*w])
	}
	var stale error
	if e.keeps(layer) && e.err == nil {
		stale = e.keeper.beginBackward(layer, e.step)
	}
	codec := e.codecFor(layer)
	caps := codec.Caps()
	inPieces := e.keeps(layer) || caps.RowByRow || caps.Pieces != nil
	pulls := fill != nil && e.PullsGradients(layer)
	if fill != nil && !pulls && (e.err != nil || stale != nil || e.uncompressed(layer) || !inPieces) {
		fill(0, dext.Rows-own, &tensor.Matrix{Rows: dext.Rows - own, Cols: w, Data: dext.Data[own*w:]})
		fill = nil
	}
	switch {
	case e.err != nil:
		return
	case stale != nil:
		e.fail(fmt.Errorf("halo gradient exchange, layer %d, step %d: %w", layer, e.step, stale))
		return
	case pulls:
		e.backwardPull(layer, dh, fill)
		return
	case e.uncompressed(layer):
		e.backwardRaw(layer, dext, dh)
		return
	}
	ratio, me := e.Ratio(layer), e.plan.me
	for q := range e.plan.peers {
		e.send[q] = e.send[q][:0]
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		// The forward message went q → me; its gradient answers it.
		key := e.key(layer, q, me, true)
		switch {
		case fill != nil && caps.Pieces != nil:
			var piece tensor.Matrix
			e.send[q] = codec.encodePieces(caps.Pieces, e.send[q], hi-lo, w, ratio, key, func(a, b int, buf []float32) {
				piece = tensor.Matrix{Rows: b - a, Cols: w, Data: buf}
				fill(lo-own+a, lo-own+b, &piece)
			})
		case fill != nil:
			e.send[q] = e.encodeGradPieces(e.send[q], codec, lo-own, hi-own, w, ratio, key, fill)
		default:
			e.send[q] = codec.Encode(e.send[q], dext.Data[lo*w:hi*w], hi-lo, w, ratio, key)
		}
	}
	if err := e.comm.AllToAll(e.site(layer, true), e.send, e.recv); err != nil {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
		return
	}
	for q, rows := range e.plan.send {
		if q == me {
			continue
		}
		if err := e.addGradients(dh, rows, codec, ratio, e.key(layer, me, q, true), e.recv[q]); err != nil {
			e.fail(fmt.Errorf("halo gradients from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
}

// encodeGradPieces appends to dst the gradient message of halo rows
// [lo, hi), made by fill a cache-sized piece at a time and encoded with key.
func (e *Exchange) encodeGradPieces(dst []byte, codec *timed, lo, hi, w int, ratio float64, key compress.Key, fill func(lo, hi int, out *tensor.Matrix)) []byte {
	n := hi - lo
	if n == 0 {
		return codec.Encode(dst, nil, 0, w, ratio, key)
	}
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.buffer(min(n, chunk) * w)
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		piece := tensor.Matrix{Rows: b - a, Cols: w, Data: buf[:(b-a)*w]}
		fill(lo+a, lo+b, &piece)
		dst = codec.Encode(dst, piece.Data, b-a, w, ratio, key)
	}
	return dst
}

// addGradients adds the gradient message msg into rows of dh. Messages go
// row by row, so it decodes a piece at a time and adds each piece while it
// is in cache, instead of writing the whole decoded message to memory and
// reading it back; a codec that goes in pieces (compress.Caps.Pieces)
// hands its rows over so; other streaming codecs' messages, and those of
// a codec whose Caps say Whole, are decoded whole.
func (e *Exchange) addGradients(dh *tensor.Matrix, rows []int32, codec *timed, ratio float64, key compress.Key, msg []byte) error {
	n, w := len(rows), dh.Cols
	if n == 0 {
		return codec.Decode(nil, 0, w, ratio, key, msg) // the message must be empty too
	}
	if p := codec.Caps().Pieces; p != nil {
		return codec.decodePieces(p, n, w, ratio, key, msg, func(lo, hi int, got []float32) {
			addRows(dh, rows[lo:hi], got)
		})
	}
	if caps := codec.Caps(); caps.Streaming != nil || caps.Whole { // a whole message of rows of no fixed size
		buf := e.buffer(n * w)
		if err := codec.Decode(buf, n, w, ratio, key, msg); err != nil {
			return err
		}
		addRows(dh, rows, buf)
		return nil
	}
	if len(msg)%n != 0 {
		return fmt.Errorf("a gradient message of %d bytes is not %d whole rows", len(msg), n)
	}
	gb := len(msg) / n
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.buffer(min(n, chunk) * w)
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		if err := codec.Decode(buf[:(b-a)*w], b-a, w, ratio, key, msg[a*gb:b*gb]); err != nil {
			return fmt.Errorf("rows [%d, %d) of %d: %w", a, b, n, err)
		}
		addRows(dh, rows[a:b], buf)
	}
	return nil
}

// addRows adds the rows of buf, in order, into rows of dh.
func addRows(dh *tensor.Matrix, rows []int32, buf []float32) {
	w := dh.Cols
	for i, r := range rows {
		dst := dh.Data[int(r)*w : (int(r)+1)*w]
		vec.Add(dst, dst, buf[i*w:(i+1)*w])
	}
}

// backwardRaw is Backward without a codec: the halo rows' gradients in
// dext are the messages, and the owned rows' gradients arrive in the peer
// buffers, from which they are added into dh. In the in-process group
// (Exchange.direct) they are added from where the peers hold them, their
// dext, in the same order: no buffer.
func (e *Exchange) backwardRaw(layer int, dext, dh *tensor.Matrix) {
	w, me := dh.Cols, e.plan.me
	if e.direct != nil {
		for q := range e.plan.send {
			e.out[q] = nil
			if q != me {
				lo, hi := e.plan.haloRows(q)
				e.out[q] = compress.FloatBytes(dext.Data[lo*w : hi*w])
			}
		}
		e.gradDH, e.gradLayer = dh, layer
		err := e.direct.AllToAllVisit(e.site(layer, true), e.out, e.addTo)
		e.gradDH = nil
		if err != nil {
			e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
		}
		return
	}
	for q, rows := range e.plan.send {
		e.out[q], e.in[q] = nil, nil
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		e.out[q] = compress.FloatBytes(dext.Data[lo*w : hi*w])
		e.in[q] = compress.FloatBytes(e.peerBuffer(q, len(rows)*w))[:0]
	}
	if err := e.comm.AllToAll(e.site(layer, true), e.out, e.in); err != nil {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
		return
	}
	for q, rows := range e.plan.send {
		if q == me {
			continue
		}
		buf := e.peerRows[q][:len(rows)*w]
		if err := receivedInPlace(buf, e.in[q]); err != nil {
			e.fail(fmt.Errorf("halo gradients from rank %d, layer %d: %w", q, layer, err))
			return
		}
		addRows(dh, rows, buf)
	}
}

// addGradientsFrom is backwardRaw's visitor in the in-process group: it
// adds peer q's gradients of the rows q reads, msg, into e.gradDH.
func (e *Exchange) addGradientsFrom(q int, msg []byte) {
	dh, rows := e.gradDH, e.plan.send[q]
	if want := 4 * len(rows) * dh.Cols; len(msg) != want {
		e.fail(fmt.Errorf("halo gradients from rank %d, layer %d: message of %d bytes, want %d", q, e.gradLayer, len(msg), want))
		return
	}
	addRows(dh, rows, floatsOf(msg))
}

// PullsGradients reports whether layer's Backward in the current pass,
// given a fill function, never writes the halo rows' gradient out: in the
// in-process group an uncompressed pass has each peer make the rows it
// reads with fill, a cache-sized piece at a time, and add them into its
// owned rows (backwardPull). A layer then passes dext with its owned rows
// alone (nn.Halo).
func (e *Exchange) PullsGradients(layer int) bool {
	return e.direct != nil && e.uncompressed(layer)
}

// backwardPull is backwardRaw in the in-process group with a fill
// function: every peer makes the gradient rows this worker would send it
// with fill, on the peer's goroutine, and adds them into its owned rows
// as backwardRaw adds a message, piece by piece; no worker holds its halo
// rows' gradient whole.
func (e *Exchange) backwardPull(layer int, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix)) {
	me := e.plan.me
	for q := range e.plan.peers {
		e.pullRows[q] = 0
		if q != me {
			lo, hi := e.plan.haloRows(q)
			e.pullRows[q] = hi - lo
		}
	}
	e.gradFill, e.gradDH, e.gradLayer = fill, dh, layer
	err := e.direct.AllToAllPull(e.site(layer, true), e.pullRows, 4*dh.Cols, e.makeGrad, e.addPulled)
	e.gradFill, e.gradDH = nil, nil
	if err != nil {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
	}
}

// makeGrad writes rows [lo, hi) of the gradient message to peer q, the
// gradients of the halo rows q owns, with the layer's fill. It runs on
// q's goroutine.
func (e *Exchange) makeGrad(q, lo, hi int, dst []byte) {
	first, _ := e.plan.haloRows(q)
	first -= e.plan.own
	w := e.gradDH.Cols
	fill := e.gradFill
	fill(first+lo, first+hi, &tensor.Matrix{Rows: hi - lo, Cols: w, Data: floatsOf(dst)[:(hi-lo)*w]})
}

// addPulled adds peer q's gradients of the n rows q reads into e.gradDH,
// reading them a cache-sized piece at a time.
func (e *Exchange) addPulled(q, n int, read func(lo, hi int, dst []byte)) {
	dh, rows := e.gradDH, e.plan.send[q]
	if n != len(rows) {
		e.fail(fmt.Errorf("halo gradients from rank %d, layer %d: %d rows, want %d", q, e.gradLayer, n, len(rows)))
		return
	}
	w := dh.Cols
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.buffer(min(n, chunk) * w)
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		read(a, b, compress.FloatBytes(buf[:(b-a)*w]))
		addRows(dh, rows[a:b], buf)
	}
}

// floatsOf is b, of float32-aligned memory, as float32s without a copy.
func floatsOf(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}
