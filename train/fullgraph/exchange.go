package fullgraph

import (
	"fmt"
	"slices"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

// Exchange is one worker's halo exchange, the nn.Halo of partition-parallel
// training. Forward sends every peer the owned rows it reads, compressed at
// the ratio the schedule gives for the current step, and receives the halo
// rows; Backward returns the halo rows' gradients to their owners through
// the same compressor, so the exchange is one differentiable operation.
//
// Evaluation passes and the last layer's exchange are never compressed:
// the VARCO authors leave the last layer's input whole, and accuracy is
// measured on the model, not on a compressed view of it.
//
// nn.Halo methods cannot return errors, so a failed exchange is sticky:
// Err reports it and the trainer checks it after each pass.
type Exchange struct {
	comm  comm.Communicator
	part  *partition.Part
	codec compress.Compressor
	exact compress.Compressor // what uncompressed passes use, whatever codec is
	sched compress.Schedule
	seed  uint64
	// layers below compressedLayers are compressed (while training).
	compressedLayers int

	step       int
	training   bool
	trainRatio float64 // the schedule's ratio at the last training pass
	err        error

	send, recv [][]byte
	rows       []float32 // gathered or decoded rows, or a piece of the halo gradient

	// Uncompressed passes skip the codec (see forwardExact): peerRows[q]
	// holds the rows for or from peer q, and out/in are the messages, which
	// view peerRows, the halo rows of ext or the gradients of dext.
	peerRows [][]float32
	out, in  [][]byte

	// With a compress.RowCoder, Forward encodes each boundary row once,
	// however many peers read it: boundary lists them (ascending), and
	// sendAt[q][i] is where Send[q][i] is in boundary.
	rowCoder    compress.RowCoder
	boundary    []int32
	sendAt      [][]int32
	sentUpTo    []int  // how many of sendAt[q] encodeShared has copied so far
	sendAscends bool   // every sendAt[q] ascends (a layout's always do)
	encoded     []byte // the boundary rows' encoding, or a piece of it
	encodedCols []byte // a GradCoder's columns of encoded's rows

	// With a compress.GradCoder, the backward messages of a layer follow
	// its forward ones, whose columns are kept until then: kept[layer]
	// holds those of the messages sent and received at that layer in the
	// step named.
	gradCoder compress.GradCoder
	kept      []keptColumns

	// codecSeconds is the time in the compressor (Encode and Decode, and a
	// GradCoder's Columns, EncodeGrad and DecodeGrad) and in copying shared
	// rows' encodings into messages, not in gathering rows or adding
	// returned gradients, which the exchange does uncompressed too;
	// uncompressed passes, which use no codec, add nothing.
	codecSeconds float64
	sites        []siteNames
}

type siteNames struct{ fwd, bwd, eval string }

type keptColumns struct {
	step       int // -1 until a forward pass has kept them all
	sent, recv [][]byte
}

// NewExchange returns the exchange of the worker that owns part, for a
// model of layers layers. A nil codec means no compression.
func NewExchange(c comm.Communicator, part *partition.Part, codec compress.Compressor, sched compress.Schedule, seed uint64, layers int) (*Exchange, error) {
	if c.Size() != len(part.Send) {
		return nil, fmt.Errorf("fullgraph: %d workers for a %d-part layout", c.Size(), len(part.Send))
	}
	if c.Rank() != part.ID {
		return nil, fmt.Errorf("fullgraph: rank %d holds part %d", c.Rank(), part.ID)
	}
	if codec == nil {
		codec, _ = compress.New("none")
	}
	if sched == nil {
		sched = compress.Fixed(1)
	}
	exact, _ := compress.New("none")
	e := &Exchange{comm: c, part: part, codec: codec, exact: exact, sched: sched, seed: seed,
		compressedLayers: layers - 1,
		send:             make([][]byte, c.Size()), recv: make([][]byte, c.Size()),
		peerRows: make([][]float32, c.Size()), out: make([][]byte, c.Size()), in: make([][]byte, c.Size())}
	if rc, ok := codec.(compress.RowCoder); ok {
		e.rowCoder = rc
		e.boundary, e.sendAt = boundaryRows(part)
		e.sentUpTo = make([]int, c.Size())
		e.sendAscends = true
		for _, at := range e.sendAt {
			e.sendAscends = e.sendAscends && slices.IsSorted(at)
		}
	}
	if gc, ok := codec.(compress.GradCoder); ok {
		e.gradCoder = gc
		e.kept = make([]keptColumns, e.compressedLayers)
		for l := range e.kept {
			e.kept[l] = keptColumns{step: -1, sent: make([][]byte, c.Size()), recv: make([][]byte, c.Size())}
		}
	}
	for l := range layers {
		e.sites = append(e.sites, siteNames{
			fwd: fmt.Sprintf("halo.fwd.%d", l), bwd: fmt.Sprintf("halo.bwd.%d", l), eval: fmt.Sprintf("halo.eval.%d", l)})
	}
	return e, nil
}

// boundaryRows returns the owned rows some peer reads, ascending, and for
// each peer where its rows are among them.
func boundaryRows(part *partition.Part) (boundary []int32, sendAt [][]int32) {
	at := map[int32]int32{}
	for q, rows := range part.Send {
		if q == part.ID {
			continue
		}
		for _, r := range rows {
			at[r] = 0
		}
	}
	for r := range at {
		boundary = append(boundary, r)
	}
	slices.Sort(boundary)
	for i, r := range boundary {
		at[r] = int32(i)
	}
	sendAt = make([][]int32, len(part.Send))
	for q, rows := range part.Send {
		if q == part.ID {
			continue
		}
		sendAt[q] = make([]int32, len(rows))
		for i, r := range rows {
			sendAt[q][i] = at[r]
		}
	}
	return boundary, sendAt
}

// Begin tells the exchange which pass comes next: the training step t
// (0-based, the schedule's clock) or an evaluation pass.
func (e *Exchange) Begin(step int, training bool) {
	e.step, e.training = step, training
	if training {
		e.trainRatio = max(e.sched.Ratio(step), 1)
	}
}

// Observe reports the loss an adaptive schedule watches (the trainer's
// validation loss after each epoch) to the schedule.
func (e *Exchange) Observe(loss float64) {
	if o, ok := e.sched.(compress.Observer); ok {
		o.Observe(e.step, loss)
	}
}

// scheduleState is the state an adaptive schedule must carry across a
// checkpoint (nil for schedules that are functions of the step alone).
func (e *Exchange) scheduleState() *compress.PlateauState {
	if p, ok := e.sched.(*compress.Plateau); ok {
		st := p.State()
		return &st
	}
	return nil
}

func (e *Exchange) restoreSchedule(st *compress.PlateauState) error {
	p, ok := e.sched.(*compress.Plateau)
	switch {
	case ok && st != nil:
		p.Restore(*st)
	case ok != (st != nil):
		return fmt.Errorf("fullgraph: the checkpoint was made with a different compression schedule than %s", e.sched)
	}
	return nil
}

// Err returns the first error of any exchange so far.
func (e *Exchange) Err() error { return e.err }

// compressing reports whether layer's exchange in the current pass is
// compressed: training passes below the last layer.
func (e *Exchange) compressing(layer int) bool {
	return e.training && layer < e.compressedLayers
}

// codecFor is the compressor of layer's exchange in the current pass. The
// uncompressed passes use none rather than the codec at ratio 1, because
// quantisers and bf16 ignore the ratio.
func (e *Exchange) codecFor(layer int) compress.Compressor {
	if e.compressing(layer) {
		return e.codec
	}
	return e.exact
}

// exactPass reports whether layer's exchange in the current pass sends
// rows as they are, without a codec (forwardExact, backwardExact).
func (e *Exchange) exactPass(layer int) bool {
	return compress.HostIsWireOrder && (!e.compressing(layer) || e.codec.Name() == "none")
}

// Ratio is the compression ratio layer's exchange uses in the current pass.
func (e *Exchange) Ratio(layer int) float64 {
	if !e.compressing(layer) {
		return 1
	}
	return max(e.sched.Ratio(e.step), 1)
}

// TrainingRatio is the ratio the schedule gave the last training step.
func (e *Exchange) TrainingRatio() float64 { return e.trainRatio }

func (e *Exchange) key(layer, from, to int, backward bool) compress.Key {
	return compress.Key{Seed: e.seed, Step: e.step, Layer: layer, From: from, To: to, Backward: backward}
}

func (e *Exchange) scratch(n int) []float32 {
	if cap(e.rows) < n {
		e.rows = make([]float32, n)
	}
	return e.rows[:n]
}

func (e *Exchange) site(layer int, backward bool) string {
	s := e.sites[min(layer, len(e.sites)-1)]
	switch {
	case !e.training:
		return s.eval
	case backward:
		return s.bwd
	}
	return s.fwd
}

// Forward writes h followed by the received halo rows into ext.
func (e *Exchange) Forward(layer int, h, ext *tensor.Matrix) {
	w, own, me := h.Cols, h.Rows, e.comm.Rank()
	if own*w > 0 && &ext.Data[0] != &h.Data[0] { // layers compute h in ext's first rows
		copy(ext.Data[:own*w], h.Data)
	}
	if e.err != nil {
		return
	}
	if e.exactPass(layer) {
		e.forwardExact(layer, h, ext)
		return
	}
	ratio, codec := e.Ratio(layer), e.codecFor(layer)
	send, recv := e.send, e.recv
	kept := e.keptFor(layer)
	if kept != nil {
		kept.step = -1 // until this step's columns are all kept
	}
	rowSender, direct := e.comm.(comm.RowSender)
	shared := e.rowCoder != nil && e.compressing(layer)
	direct = direct && shared
	if shared {
		e.encodeShared(send, kept, layer, h, ratio, direct)
	} else {
		for q, rows := range e.part.Send {
			if q == me {
				send[q] = send[q][:0]
				continue
			}
			send[q] = e.encodeRows(send[q][:0], codec, h, rows, ratio, e.key(layer, me, q, false))
			start := time.Now()
			e.keepSentColumns(kept, layer, q, w, ratio, send[q])
			e.codecSeconds += time.Since(start).Seconds()
		}
	}
	if e.err != nil {
		return
	}
	var err error
	if direct {
		err = rowSender.AllToAllRows(e.site(layer, false), e.encoded, e.rowCoder.RowBytes(w, ratio), e.sendAt, recv)
	} else {
		err = e.comm.AllToAll(e.site(layer, false), send, recv)
	}
	if err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
		return
	}
	start := time.Now()
	defer func() { e.codecSeconds += time.Since(start).Seconds() }()
	for q := range e.part.Send {
		if q == me {
			continue
		}
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		key := e.key(layer, q, me, false)
		var err error
		if kept != nil { // the backward pass answers these messages
			kept.recv[q], err = e.decodeKeeping(ext.Data[lo*w:hi*w], kept.recv[q][:0], hi-lo, w, ratio, key, recv[q])
		} else {
			err = codec.Decode(ext.Data[lo*w:hi*w], hi-lo, w, ratio, key, recv[q])
		}
		if err != nil {
			e.fail(fmt.Errorf("halo rows from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
	if kept != nil {
		kept.step = e.step // decoded: the backward pass may use them
	}
}

// forwardExact is Forward without compression, where a message is the rows'
// float32s as they are: each peer's rows are gathered straight into its
// message, and a peer's message lands straight in ext's halo rows when the
// communicator fills the buffer it is given in place (it reuses capacity;
// otherwise the rows are copied from where it put them).
func (e *Exchange) forwardExact(layer int, h, ext *tensor.Matrix) {
	w, own, me := h.Cols, h.Rows, e.comm.Rank()
	for q, rows := range e.part.Send {
		e.out[q], e.in[q] = nil, nil
		if q == me {
			continue
		}
		buf := e.peerBuffer(q, len(rows)*w)
		gatherRows(buf, h, rows)
		e.out[q] = compress.FloatBytes(buf)
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		e.in[q] = compress.FloatBytes(ext.Data[lo*w : hi*w])[:0]
	}
	if err := e.comm.AllToAll(e.site(layer, false), e.out, e.in); err != nil {
		e.fail(fmt.Errorf("halo exchange, layer %d: %w", layer, err))
		return
	}
	for q := range e.part.Send {
		if q == me {
			continue
		}
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		if err := receivedInPlace(ext.Data[lo*w:hi*w], e.in[q]); err != nil {
			e.fail(fmt.Errorf("halo rows from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
}

// peerBuffer is peer q's row buffer, n float32s long.
func (e *Exchange) peerBuffer(q, n int) []float32 {
	if cap(e.peerRows[q]) < n {
		e.peerRows[q] = make([]float32, n)
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

// decodeKeeping decodes a GradCoder's message of rows rows into out and
// appends its columns to cols. A RowCoder's message is decoded a
// cache-sized piece of rows at a time, its columns taken from each piece
// while it is in cache.
func (e *Exchange) decodeKeeping(out []float32, cols []byte, rows, w int, ratio float64, key compress.Key, msg []byte) ([]byte, error) {
	if e.rowCoder == nil {
		if err := e.codec.Decode(out, rows, w, ratio, key, msg); err != nil {
			return cols, err
		}
		return e.gradCoder.Columns(cols, msg, rows, w, ratio)
	}
	rb := e.rowCoder.RowBytes(w, ratio)
	if len(msg) != rows*rb {
		return cols, fmt.Errorf("message of %d bytes, want %d rows of %d", len(msg), rows, rb)
	}
	chunk := max(1, rowChunk/max(w, 1))
	for a := 0; a < rows; a += chunk {
		b := min(a+chunk, rows)
		piece := msg[a*rb : b*rb]
		if err := e.codec.Decode(out[a*w:b*w], b-a, w, ratio, key, piece); err != nil {
			return cols, fmt.Errorf("rows [%d, %d) of %d: %w", a, b, rows, err)
		}
		var err error
		if cols, err = e.gradCoder.Columns(cols, piece, b-a, w, ratio); err != nil {
			return cols, err
		}
	}
	return cols, nil
}

// keptFor returns layer's kept columns when its gradients answer its
// forward messages (a GradCoder on a compressed layer), or nil.
func (e *Exchange) keptFor(layer int) *keptColumns {
	if e.gradCoder == nil || !e.compressing(layer) {
		return nil
	}
	return &e.kept[layer]
}

// keepSentColumns keeps the columns of the message to peer q, msg, when
// its gradient will answer it (kept is not nil). It runs as each message
// is made, while the message is in cache.
func (e *Exchange) keepSentColumns(kept *keptColumns, layer, q, w int, ratio float64, msg []byte) {
	if kept == nil {
		return
	}
	var err error
	kept.sent[q], err = e.gradCoder.Columns(kept.sent[q][:0], msg, len(e.part.Send[q]), w, ratio)
	if err != nil {
		e.fail(fmt.Errorf("halo rows to rank %d, layer %d: %w", q, layer, err))
	}
}

// encodeShared encodes the boundary rows once, however many peers read
// them, and keeps their columns in kept (if not nil), taken once per
// boundary row and copied per peer. With direct, the encoding is left
// whole in e.encoded, from which a comm.RowSender sends each peer its
// rows; otherwise each row's bytes are copied into the messages in send
// that carry it. Rows are gathered, encoded and copied out a cache-sized
// piece at a time (a RowCoder's rows encode independently), so the
// gathered rows never go to memory, nor, when copied into messages and
// every peer's rows ascend in boundary, their encoding; rows in another
// order (a part file may list them so) are copied out after the whole
// encoding.
func (e *Exchange) encodeShared(send [][]byte, kept *keptColumns, layer int, h *tensor.Matrix, ratio float64, direct bool) {
	w, me, n := h.Cols, e.comm.Rank(), len(e.boundary)
	key := e.key(layer, me, me, false)
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.scratch(min(n, chunk) * w)
	rb := e.rowCoder.RowBytes(w, ratio)
	for q := range send {
		send[q] = send[q][:0]
		if kept != nil {
			kept.sent[q] = kept.sent[q][:0]
		}
		e.sentUpTo[q] = 0
	}
	whole := direct || !e.sendAscends // the encoding is kept whole
	e.encoded, e.encodedCols = e.encoded[:0], e.encodedCols[:0]
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		gatherRows(buf[:(b-a)*w], h, e.boundary[a:b])
		start := time.Now()
		if !whole {
			e.encoded, e.encodedCols = e.encoded[:0], e.encodedCols[:0]
		}
		at0, cols0 := len(e.encoded), len(e.encodedCols)
		e.encoded = e.rowCoder.Encode(e.encoded, buf[:(b-a)*w], b-a, w, ratio, key)
		piece := e.encoded[at0:]
		cb := 0
		if kept != nil {
			var err error
			if e.encodedCols, err = e.gradCoder.Columns(e.encodedCols, piece, b-a, w, ratio); err != nil {
				e.fail(fmt.Errorf("halo rows, layer %d: %w", layer, err))
				return
			}
			cb = (len(e.encodedCols) - cols0) / (b - a)
		}
		if !e.sendAscends {
			e.codecSeconds += time.Since(start).Seconds()
			continue
		}
		pieceCols := e.encodedCols[cols0:]
		for q, at := range e.sendAt {
			if q == me {
				continue
			}
			i := e.sentUpTo[q]
			j := i
			for j < len(at) && int(at[j]) < b {
				j++
			}
			if !direct {
				send[q] = appendRows(send[q], piece, rb, at[i:j], a)
			}
			if kept != nil {
				kept.sent[q] = appendRows(kept.sent[q], pieceCols, cb, at[i:j], a)
			}
			e.sentUpTo[q] = j
		}
		e.codecSeconds += time.Since(start).Seconds()
	}
	if e.sendAscends || n == 0 {
		return
	}
	start := time.Now()
	cb := len(e.encodedCols) / n
	for q, at := range e.sendAt {
		if q == me {
			continue
		}
		if !direct {
			send[q] = appendRows(send[q], e.encoded, rb, at, 0)
		}
		if kept != nil {
			kept.sent[q] = appendRows(kept.sent[q], e.encodedCols, cb, at, 0)
		}
	}
	e.codecSeconds += time.Since(start).Seconds()
}

// encodeRows appends to dst the encoding of rows of h by codec with key.
// A RowEncoder's rows are gathered and encoded a cache-sized piece at a
// time, so that the gathered rows never go to memory; other codecs'
// messages are gathered whole first.
func (e *Exchange) encodeRows(dst []byte, codec compress.Compressor, h *tensor.Matrix, rows []int32, ratio float64, key compress.Key) []byte {
	w, n := h.Cols, len(rows)
	chunk := max(n, 1)
	if _, ok := codec.(compress.RowEncoder); ok {
		chunk = max(1, rowChunk/max(w, 1))
	}
	buf := e.scratch(min(n, chunk) * w)
	for a := 0; a < n || a == 0; a += chunk { // once with no rows: the codec makes the empty message
		b := min(a+chunk, n)
		gatherRows(buf[:(b-a)*w], h, rows[a:b])
		start := time.Now()
		dst = codec.Encode(dst, buf[:(b-a)*w], b-a, w, ratio, key)
		e.codecSeconds += time.Since(start).Seconds()
	}
	return dst
}

// appendRows appends to dst the rows at−first of src, rows of size bytes
// each.
func appendRows(dst, src []byte, size int, at []int32, first int) []byte {
	dst = slices.Grow(dst, len(at)*size)
	for _, i := range at {
		i := int(i) - first
		dst = append(dst, src[i*size:(i+1)*size]...)
	}
	return dst
}

// gatherRows copies rows of h, in order, into buf.
func gatherRows(buf []float32, h *tensor.Matrix, rows []int32) {
	w := h.Cols
	for i, r := range rows {
		copy(buf[i*w:(i+1)*w], h.Data[int(r)*w:(int(r)+1)*w])
	}
}

// Backward sends the halo rows' gradients to their owners and writes into
// dh the owned rows' gradient plus what the peers returned.
func (e *Exchange) Backward(layer int, dext, dh *tensor.Matrix) {
	e.BackwardRows(layer, dext, dh, nil)
}

// BackwardRows makes the exchange an nn.HaloRows: Backward, with dext's
// halo rows written by fill when it is not nil. Where the gradient is
// compressed by a GradCoder or a RowEncoder, fill writes a cache-sized
// piece of rows at a time, each encoded before the next is made, so the
// halo rows' gradient never goes to memory; elsewhere fill writes them all
// into dext.
func (e *Exchange) BackwardRows(layer int, dext, dh *tensor.Matrix, fill func(lo, hi int, out *tensor.Matrix)) {
	w, own, me := dh.Cols, dh.Rows, e.comm.Rank()
	if own*w > 0 && &dh.Data[0] != &dext.Data[0] { // layers reduce in dext's first rows
		copy(dh.Data, dext.Data[:own*w])
	}
	kept := e.keptFor(layer)
	_, rowByRow := e.codecFor(layer).(compress.RowEncoder)
	stale := kept != nil && kept.step != e.step
	if fill != nil && (e.err != nil || stale || e.exactPass(layer) || (kept == nil && !rowByRow)) {
		fill(0, dext.Rows-own, &tensor.Matrix{Rows: dext.Rows - own, Cols: w, Data: dext.Data[own*w:]})
		fill = nil
	}
	if e.err != nil {
		return
	}
	if e.exactPass(layer) {
		e.backwardExact(layer, dext, dh)
		return
	}
	ratio, codec := e.Ratio(layer), e.codecFor(layer)
	if stale {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d, step %d: no forward exchange in this step", layer, e.step))
		return
	}
	for q := range e.part.Send {
		if q == me {
			e.send[q] = e.send[q][:0]
			continue
		}
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		// The forward message went q → me; its gradient answers it.
		switch {
		case fill != nil:
			e.send[q] = e.encodeGradPieces(e.send[q][:0], codec, lo-own, hi-own, w, ratio, kept, q, e.key(layer, q, me, true), fill)
		case kept != nil:
			start := time.Now()
			e.send[q] = e.gradCoder.EncodeGrad(e.send[q][:0], dext.Data[lo*w:hi*w], hi-lo, w, ratio, kept.recv[q])
			e.codecSeconds += time.Since(start).Seconds()
		default:
			start := time.Now()
			e.send[q] = codec.Encode(e.send[q][:0], dext.Data[lo*w:hi*w], hi-lo, w, ratio, e.key(layer, q, me, true))
			e.codecSeconds += time.Since(start).Seconds()
		}
	}
	if err := e.comm.AllToAll(e.site(layer, true), e.send, e.recv); err != nil {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
		return
	}
	for q, rows := range e.part.Send {
		if q == me {
			continue
		}
		d := gradDecoder{codec: codec, ratio: ratio, key: e.key(layer, me, q, true)}
		if kept != nil {
			d.grad, d.cols = e.gradCoder, kept.sent[q]
		}
		if err := e.addGradients(dh, rows, d, e.recv[q]); err != nil {
			e.fail(fmt.Errorf("halo gradients from rank %d, layer %d: %w", q, layer, err))
			return
		}
	}
}

// encodeGradPieces appends to dst the gradient message of halo rows
// [lo, hi) (those of peer q), made by fill a cache-sized piece at a time:
// a GradCoder's at the columns kept of q's forward message, or codec's, a
// RowEncoder, with key.
func (e *Exchange) encodeGradPieces(dst []byte, codec compress.Compressor, lo, hi, w int, ratio float64, kept *keptColumns, q int, key compress.Key, fill func(lo, hi int, out *tensor.Matrix)) []byte {
	n, cb := hi-lo, 0
	var cols []byte
	if kept != nil {
		cols = kept.recv[q]
		if n > 0 && len(cols)%n != 0 {
			panic(fmt.Sprintf("fullgraph: %d bytes of forward columns for %d rows", len(cols), n))
		}
		cb = len(cols) / max(n, 1)
	}
	encode := func(dst []byte, x []float32, a, b int) []byte {
		if kept != nil {
			return e.gradCoder.EncodeGrad(dst, x, b-a, w, ratio, cols[a*cb:b*cb])
		}
		return codec.Encode(dst, x, b-a, w, ratio, key)
	}
	if n == 0 {
		return encode(dst, nil, 0, 0)
	}
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.scratch(min(n, chunk) * w)
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		piece := tensor.Matrix{Rows: b - a, Cols: w, Data: buf[:(b-a)*w]}
		fill(lo+a, lo+b, &piece)
		start := time.Now()
		dst = encode(dst, piece.Data, a, b)
		e.codecSeconds += time.Since(start).Seconds()
	}
	return dst
}

// rowChunk is how many float32s of rows the exchange holds at a time where
// it would otherwise write rows to memory only to read them back: 64 KiB
// (or one row, if wider), which stays in cache.
const rowChunk = 1 << 14

// gradDecoder decodes a peer's gradient message: with codec and key, or,
// when grad is set, at the columns cols of the forward message it answers
// (all of them; addGradients hands decode the rows each piece needs).
type gradDecoder struct {
	codec compress.Compressor
	grad  compress.GradCoder
	ratio float64
	key   compress.Key
	cols  []byte
}

// decode decodes rows rows of a gradient message, msg, into out; cols
// holds the forward message's columns of the same rows.
func (d gradDecoder) decode(out []float32, rows, width int, cols, msg []byte) error {
	if d.grad != nil {
		return d.grad.DecodeGrad(out, rows, width, d.ratio, cols, msg)
	}
	return d.codec.Decode(out, rows, width, d.ratio, d.key, msg)
}

// addGradients adds the gradient message msg into rows of dh. Messages go
// row by row, so it decodes a piece at a time and adds each piece while it
// is in cache, instead of writing the whole decoded message to memory and
// reading it back.
func (e *Exchange) addGradients(dh *tensor.Matrix, rows []int32, d gradDecoder, msg []byte) error {
	n, w := len(rows), dh.Cols
	if n == 0 {
		return d.decode(nil, 0, w, d.cols, msg) // the message must be empty too
	}
	if len(d.cols)%n != 0 || len(msg)%n != 0 {
		return fmt.Errorf("a gradient message of %d bytes (forward columns %d) is not %d whole rows", len(msg), len(d.cols), n)
	}
	cb, gb := len(d.cols)/n, len(msg)/n
	chunk := max(1, rowChunk/max(w, 1))
	buf := e.scratch(min(n, chunk) * w)
	for a := 0; a < n; a += chunk {
		b := min(a+chunk, n)
		start := time.Now()
		err := d.decode(buf[:(b-a)*w], b-a, w, d.cols[a*cb:b*cb], msg[a*gb:b*gb])
		e.codecSeconds += time.Since(start).Seconds()
		if err != nil {
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

// backwardExact is Backward without compression: the halo rows' gradients
// in dext are the messages, and the owned rows' gradients arrive in the
// peer buffers, from which they are added into dh.
func (e *Exchange) backwardExact(layer int, dext, dh *tensor.Matrix) {
	w, own, me := dh.Cols, dh.Rows, e.comm.Rank()
	for q, rows := range e.part.Send {
		e.out[q], e.in[q] = nil, nil
		if q == me {
			continue
		}
		lo, hi := own+e.part.HaloStart[q], own+e.part.HaloStart[q+1]
		e.out[q] = compress.FloatBytes(dext.Data[lo*w : hi*w])
		e.in[q] = compress.FloatBytes(e.peerBuffer(q, len(rows)*w))[:0]
	}
	if err := e.comm.AllToAll(e.site(layer, true), e.out, e.in); err != nil {
		e.fail(fmt.Errorf("halo gradient exchange, layer %d: %w", layer, err))
		return
	}
	for q, rows := range e.part.Send {
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

func (e *Exchange) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
