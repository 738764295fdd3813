package halo

import (
	"fmt"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/tensor"
)

// rowChunk is how many float32s of rows the exchange holds at a time where
// it would otherwise write rows to memory only to read them back: 64 KiB
// (or one row, if wider), which stays in cache.
const rowChunk = 1 << 14

// Forward writes h followed by the received halo rows into ext. h may be
// the first rows of ext, as the layers compute it. With Config.BF16 the
// rows that would go as they are go in bf16 (the layers rounded them), and
// the rows a codec decodes are rounded to bf16, as ForwardBF16 stores them.
func (e *Exchange) Forward(layer int, h, ext *tensor.Matrix) {
	w, own := h.Cols, h.Rows
	if own*w > 0 && &ext.Data[0] != &h.Data[0] {
		copy(ext.Data[:own*w], h.Data)
	}
	if e.err != nil {
		return
	}
	if e.uncompressed(layer) && e.bf16 == nil {
		e.forwardRaw(layer, h, ext)
		return
	}
	e.forwardCoded(layer, rowSet{f32: h}, rowSet{f32: ext, round: e.bf16 != nil})
}

// ForwardBF16 is Forward for rows held in bfloat16 (nn.Halo): ext's first
// own rows are the owned rows, and the halo rows are written after them.
// Passes that send rows as they are send the bf16 rows themselves, which
// land straight in ext; a codec encodes them widened to float32, and the
// rows it decodes are rounded to bf16 as they are stored.
func (e *Exchange) ForwardBF16(layer int, ext *tensor.MatrixBF16, own int) {
	if e.err != nil {
		return
	}
	h := &tensor.MatrixBF16{Rows: own, Cols: ext.Cols, Data: ext.Data[:own*ext.Cols]}
	if e.uncompressed(layer) {
		e.forwardRawBF16(layer, h, ext)
		return
	}
	e.forwardCoded(layer, rowSet{b16: h}, rowSet{b16: ext})
}

// forwardCoded sends the owned rows h through the forward pass's codec and
// decodes the peers' rows into ext's halo rows.
func (e *Exchange) forwardCoded(layer int, h, ext rowSet) {
	w := h.cols()
	ratio, codec := e.Ratio(layer), e.forwardCodec(layer)
	if e.keeps(layer) {
		e.keeper.beginForward(layer)
	}
	var err error
	if e.shares(layer) {
		err = e.sendShared(layer, h, ratio)
	} else {
		err = e.sendPerPeer(layer, codec, h, ratio)
	}
	if err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
		return
	}
	me := e.plan.me
	for q := range e.plan.peers {
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		key := e.key(layer, q, me, false)
		var err error
		if p := codec.Caps().Pieces; p != nil && ext.b16 != nil {
			// Rows held in bf16: each piece rounded into them as the codec
			// hands it over, rather than all decoded into scratch first.
			err = codec.decodePieces(p, hi-lo, w, ratio, key, e.recv[q], func(a, b int, rows []float32) {
				ext.store(lo+a, rows)
			})
		} else {
			out := ext.f32Rows(lo, hi, e)
			if err = codec.Decode(out, hi-lo, w, ratio, key, e.recv[q]); err == nil {
				ext.store(lo, out)
			}
		}
		if err != nil {
			e.fail(fmt.Errorf("halo rows from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
	if e.keeps(layer) {
		e.keeper.endForward(layer, e.step)
	}
}

// rowSet is the rows a forward pass reads or writes: float32 ones, or
// bf16 ones, which codecs read widened to float32. round marks float32
// rows that hold bf16 values (Config.BF16 with Forward): the rows a codec
// decodes into them are rounded to bf16, as ForwardBF16 stores them.
type rowSet struct {
	f32   *tensor.Matrix
	b16   *tensor.MatrixBF16
	round bool
}

func (s rowSet) cols() int {
	if s.b16 != nil {
		return s.b16.Cols
	}
	return s.f32.Cols
}

// gather copies rows of s, in order, into buf as float32.
func (s rowSet) gather(buf []float32, rows []int32) {
	if s.b16 != nil {
		w := s.b16.Cols
		bf16.Gather(buf, w, s.b16.Data, w, w, rows)
		return
	}
	gatherRows(buf, s.f32, rows)
}

// f32Rows is where rows [lo, hi) of s are decoded: s's own for float32
// rows, the exchange's scratch for bf16 ones (store rounds them into s).
func (s rowSet) f32Rows(lo, hi int, e *Exchange) []float32 {
	if s.b16 != nil {
		return e.buffer((hi - lo) * s.b16.Cols)
	}
	return s.f32.Data[lo*s.f32.Cols : hi*s.f32.Cols]
}

// store writes rows decoded by f32Rows from row lo on: bf16 rows rounded
// into s, float32 rows holding bf16 values rounded in place.
func (s rowSet) store(lo int, rows []float32) {
	switch {
	case s.b16 != nil:
		bf16.Encode(s.b16.Data[lo*s.b16.Cols:], rows)
	case s.round:
		for i, v := range rows {
			rows[i] = bf16.ToFloat32(bf16.FromFloat32(v))
		}
	}
}

// sendPerPeer encodes each peer's rows into its own message and exchanges
// the messages.
func (e *Exchange) sendPerPeer(layer int, codec *timed, h rowSet, ratio float64) error {
	me := e.plan.me
	for q, rows := range e.plan.send {
		e.send[q] = e.send[q][:0]
		if q != me {
			e.send[q] = e.encodeRows(e.send[q], codec, h, rows, ratio, e.key(layer, me, q, false))
		}
	}
	if e.keeper != nil {
		if err := e.keeper.takeErr(); err != nil {
			return err
		}
	}
	return e.comm.AllToAll(e.site(layer, false), e.send, e.recv)
}

// encodeRows appends to dst the encoding of rows of h by codec with key.
// A row-by-row codec's rows are gathered and encoded a cache-sized piece
// at a time, so that the gathered rows never go to memory, and a codec
// that goes in pieces (compress.Caps.Pieces) gathers them so as it asks
// for them; other codecs' messages are gathered whole first.
func (e *Exchange) encodeRows(dst []byte, codec *timed, h rowSet, rows []int32, ratio float64, key compress.Key) []byte {
	w, n := h.cols(), len(rows)
	if p := codec.Caps().Pieces; p != nil {
		return codec.encodePieces(p, dst, n, w, ratio, key, func(lo, hi int, buf []float32) {
			h.gather(buf, rows[lo:hi])
		})
	}
	chunk := max(n, 1)
	if codec.Caps().RowByRow {
		chunk = max(1, rowChunk/max(w, 1))
	}
	buf := e.buffer(min(n, chunk) * w)
	for a := 0; a < n || a == 0; a += chunk { // once with no rows: the codec makes the empty message
		b := min(a+chunk, n)
		h.gather(buf[:(b-a)*w], rows[a:b])
		dst = codec.Encode(dst, buf[:(b-a)*w], b-a, w, ratio, key)
	}
	return dst
}

// sendShared encodes every boundary row once, a cache-sized piece at a
// time (the gathered rows never go to memory), and sends each peer its
// rows of that one encoding.
func (e *Exchange) sendShared(layer int, h rowSet, ratio float64) error {
	w, me, n := h.cols(), e.plan.me, len(e.plan.boundary)
	key := e.key(layer, me, me, false)
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.buffer(min(n, chunk) * w)
	e.encoded = e.encoded[:0]
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		h.gather(buf[:(b-a)*w], e.plan.boundary[a:b])
		e.encoded = e.codec.Encode(e.encoded, buf[:(b-a)*w], b-a, w, ratio, key)
	}
	if e.keeper != nil {
		if err := e.keeper.takeErr(); err != nil {
			return err
		}
	}
	return e.rows(e.site(layer, false), e.encoded, e.caps.Rows.RowBytes(w, ratio), e.plan.sendAt, e.recv)
}

// forwardRaw is Forward without a codec, where a message is the rows'
// float32s as they are: each peer's rows are gathered straight into its
// message, and a peer's message lands straight in ext's halo rows when the
// communicator fills the buffer it is given in place (it reuses capacity;
// otherwise the rows are copied from where it put them). In the
// in-process group (Exchange.direct) no message is built: each peer
// copies its rows from h into its halo rows.
func (e *Exchange) forwardRaw(layer int, h, ext *tensor.Matrix) {
	w, me := h.Cols, e.plan.me
	for q, rows := range e.plan.send {
		e.out[q], e.in[q] = nil, nil
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		e.in[q] = compress.FloatBytes(ext.Data[lo*w : hi*w])[:0]
		if e.direct == nil {
			buf := e.peerBuffer(q, len(rows)*w)
			gatherRows(buf, h, rows)
			e.out[q] = compress.FloatBytes(buf)
		}
	}
	var err error
	if e.direct != nil {
		err = e.direct.AllToAllRows(e.site(layer, false), compress.FloatBytes(h.Data), 4*w, e.plan.send, e.in)
	} else {
		err = e.comm.AllToAll(e.site(layer, false), e.out, e.in)
	}
	if err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
		return
	}
	for q := range e.plan.send {
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		if err := receivedInPlace(ext.Data[lo*w:hi*w], e.in[q]); err != nil {
			e.fail(fmt.Errorf("halo rows from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
}

// forwardRawBF16 is forwardRaw for bf16 rows: each peer's rows are
// gathered into its message (two bytes a value), or copied by the peer
// from h in the in-process group, and a peer's message lands straight in
// ext's halo rows.
func (e *Exchange) forwardRawBF16(layer int, h, ext *tensor.MatrixBF16) {
	w, me := h.Cols, e.plan.me
	for q, rows := range e.plan.send {
		e.out[q], e.in[q] = nil, nil
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		e.in[q] = compress.HalfBytes(ext.Data[lo*w : hi*w])[:0]
		if e.direct == nil {
			buf := compress.FloatBytes(e.peerBuffer(q, (len(rows)*w+1)/2))[:2*len(rows)*w]
			bf16.GatherBF16(compress.Halfs(buf), w, h.Data, w, w, rows)
			e.out[q] = buf
		}
	}
	var err error
	if e.direct != nil {
		err = e.direct.AllToAllRows(e.site(layer, false), compress.HalfBytes(h.Data), 2*w, e.plan.send, e.in)
	} else {
		err = e.comm.AllToAll(e.site(layer, false), e.out, e.in)
	}
	if err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
		return
	}
	for q := range e.plan.send {
		if q == me {
			continue
		}
		lo, hi := e.plan.haloRows(q)
		view := compress.HalfBytes(ext.Data[lo*w : hi*w])
		if msg := e.in[q]; len(msg) != len(view) {
			e.fail(fmt.Errorf("halo rows from rank %d, layer %d: message of %d bytes, want %d", q, layer, len(msg), len(view)))
			return
		} else if len(msg) > 0 && &msg[0] != &view[0] {
			copy(view, msg)
		}
	}
}

// peerBuffer is peer q's row buffer, n float32s long.
func (e *Exchange) peerBuffer(q, n int) []float32 {
	if cap(e.peerRows[q]) < n {
		was := cap(e.peerRows[q])
		e.peerRows[q] = hugepage.Float32s(n)
		memacct.Grown(memacct.Communication, was, n, 4)
	}
	return e.peerRows[q][:n]
}

// receivedInPlace checks that msg, received into a buffer viewing dst, is
// dst's size, and copies it into dst if the communicator put it elsewhere.
func receivedInPlace(dst []float32, msg []byte) error {
	view := compress.FloatBytes(dst)
	if len(msg) != len(view) {
		return fmt.Errorf("message of %d bytes, want %d", len(msg), len(view))
	}
	if len(msg) > 0 && &msg[0] != &view[0] {
		copy(view, msg)
	}
	return nil
}

// gatherRows copies rows of h, in order, into buf.
func gatherRows(buf []float32, h *tensor.Matrix, rows []int32) {
	w := h.Cols
	for i, r := range rows {
		copy(buf[i*w:(i+1)*w], h.Data[int(r)*w:(int(r)+1)*w])
	}
}
