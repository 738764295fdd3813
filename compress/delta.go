package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	mbits "math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/internal/memacct"
)

// Delta is temporal delta coding with error feedback. Sender and receiver
// of every stream (a layer, a direction, a sender and a receiver: a Key
// without its step) keep the receiver's reconstruction of the stream's
// rows. Each message quantises, per row, the difference between the new
// row and that reconstruction, and both ends add the decoded difference to
// it: the sender decodes what it sends, so the two reconstructions stay
// bit for bit the same, and the quantisation error of one message is part
// of the next message's difference (error feedback), so it never
// accumulates. A row whose difference is small against the row (relative
// L2 norm below Threshold) is skipped, and the receiver keeps its stale
// reconstruction, but no row goes unsent for MaxStale messages in a row.
//
// A message is a bitmap of the rows sent, then each sent row: at 32 bits
// its new value as float32s (the exact difference: the reconstruction
// becomes the row), else the difference's minimum and step (bfloat16s, the
// minimum rounded down and the step up) and one Bits-wide code per value,
// rounded to nearest and packed little-endian. A skipped row costs its bit.
//
// Gradients can travel through another codec (Grad): they change at every
// step, so a plain quantiser may do as well for fewer bytes.
//
// With BF16 (a run at bf16 precision, SetBF16) the reconstructions are
// kept in bfloat16, half the memory: after each message both ends round
// the updated reconstruction to the nearest bfloat16 (ties to even), so
// they stay bit for bit equal, and the next message's difference is taken
// against the rounded reconstruction, so the rounding error is fed back
// like the quantisation error and never accumulates (deltabf16.go).
type Delta struct {
	Bits      int     // 1, 2, 4, 8, or 32 for exact rows; 0: from the schedule's ratio (BitsAt)
	Threshold float64 // skip rows with ‖new − reconstruction‖ < Threshold·‖new‖
	MaxStale  int     // a row is sent at least once in every MaxStale messages; 0: no bound
	// Grad, if not nil, encodes the backward (gradient) messages instead.
	Grad     Compressor
	GradName string // Grad's spec, for Name
	// BF16 keeps every stream's reconstruction in bfloat16 (deltabf16.go).
	// Set it before the first message.
	BF16 bool

	streams map[streamEnd]*deltaStream
	diff    []float32 // scratch: a row's difference
	wide    []float32 // scratch: a block of a bfloat16 reconstruction, widened
	piece   []float32 // scratch: a block of rows to encode (EncodePieces)
}

// StreamID names a stream of messages whose state a stateful codec
// keeps: a Key without the step and seed.
type StreamID struct {
	Layer, From, To int
	Backward        bool
}

func streamOf(k Key) StreamID {
	return StreamID{Layer: k.Layer, From: k.From, To: k.To, Backward: k.Backward}
}

// streamEnd is one end of a stream: a codec value may be both (a worker
// sending to itself, a test's loopback), and each end keeps its copy.
type streamEnd struct {
	StreamID
	Recv bool
}

// deltaStream is one stream's reconstruction, rows×width, in float32
// (recon) or, with bf16, in bfloat16 (half), and how many messages in a
// row skipped each row (−1: never sent).
type deltaStream struct {
	rows, width int
	bf16        bool
	recon       []float32
	half        []uint16
	skipped     []int32
}

// newDeltaStream is the state of a stream of messages of rows×width
// before its first message, its reconstruction in bfloat16 if half. Its
// bytes count toward the process's communication memory (package
// memacct): with many parts nearly every node is some peer's halo row,
// and the reconstructions, kept at both ends of every stream, can
// outweigh the model's activations.
func newDeltaStream(rows, width int, half bool) *deltaStream {
	s := &deltaStream{rows: rows, width: width, bf16: half, skipped: make([]int32, rows)}
	if half {
		s.half = make([]uint16, rows*width)
	} else {
		s.recon = make([]float32, rows*width)
	}
	memacct.Add(memacct.Communication, s.bytes())
	return s
}

// bytes is the memory the stream's state holds: 4 bytes a float32 value
// and a skip count, 2 a bfloat16 value.
func (s *deltaStream) bytes() int64 {
	return 4*int64(len(s.recon)+len(s.skipped)) + 2*int64(len(s.half))
}

// releaseStreams takes the state of streams the codec lets go out of the
// process's communication memory.
func releaseStreams(streams map[streamEnd]*deltaStream) {
	for _, s := range streams {
		memacct.Add(memacct.Communication, -s.bytes())
	}
}

// Streaming is what a codec whose Caps set Streaming does beyond a
// Compressor: it keeps state per stream, which a checkpoint must keep for
// a resumed run to continue exactly.
type Streaming interface {
	// StreamState is the codec's state, in a form only RestoreStreams reads.
	StreamState() ([]byte, error)
	RestoreStreams(state []byte) error
	// SetBF16 tells the codec, before its first message, whether the run
	// is at bf16 precision, where a receiver rounds the rows it decodes in
	// forward passes to bfloat16 anyway: a codec may then keep its state
	// in bfloat16 (Delta.BF16). Both ends of a stream must be told alike.
	SetBF16(on bool)
}

// DeltaUsage is the form of a delta codec's spec.
const DeltaUsage = "delta[:BITS|r[:THRESHOLD[:MAXSTALE[:GRAD]]]]"

// Delta's defaults, for the fields a spec leaves out.
const (
	DefaultDeltaBits      = 4
	DefaultDeltaThreshold = 0
	DefaultDeltaMaxStale  = 0
)

func init() {
	RegisterFamily("delta", DeltaUsage, ParseDelta)
}

// ParseDelta reads a delta codec's spec, delta[:BITS[:THRESHOLD[:MAXSTALE[:GRAD]]]]:
// BITS one of 1, 2, 4, 8 and 32 (exact rows) or r (from the schedule's
// ratio, BitsAt), THRESHOLD ≥ 0 the relative
// change below which a row is skipped, MAXSTALE ≥ 0 the most messages a
// row goes without being sent (0: no bound), GRAD the codec of the
// gradients (delta, the default: the same coding; or a registered codec
// name such as quant4 or none). It returns the constructor of such codecs.
func ParseDelta(spec string) (func() Compressor, error) {
	f := strings.Split(spec, ":")
	if f[0] != "delta" || len(f) > 5 {
		return nil, fmt.Errorf("%q: want %s", spec, DeltaUsage)
	}
	d := Delta{Bits: DefaultDeltaBits, Threshold: DefaultDeltaThreshold, MaxStale: DefaultDeltaMaxStale}
	var err error
	if len(f) > 1 {
		if f[1] == "r" {
			d.Bits = 0
		} else if d.Bits, err = strconv.Atoi(f[1]); err != nil || !slices.Contains([]int{1, 2, 4, 8, 32}, d.Bits) {
			return nil, fmt.Errorf("%q: bits %q: want 1, 2, 4, 8, 32 or r", spec, f[1])
		}
	}
	if len(f) > 2 {
		if d.Threshold, err = strconv.ParseFloat(f[2], 64); err != nil || !(d.Threshold >= 0) || math.IsInf(d.Threshold, 1) {
			return nil, fmt.Errorf("%q: threshold %q: want a number ≥ 0", spec, f[2])
		}
	}
	if len(f) > 3 {
		if d.MaxStale, err = strconv.Atoi(f[3]); err != nil || d.MaxStale < 0 {
			return nil, fmt.Errorf("%q: max staleness %q: want an integer ≥ 0", spec, f[3])
		}
	}
	var grad func() Compressor
	if len(f) > 4 && f[4] != "delta" {
		if strings.Contains(f[4], ":") {
			return nil, fmt.Errorf("%q: gradient codec %q: want delta or a codec without parameters", spec, f[4])
		}
		if grad, err = Factory(f[4]); err != nil {
			return nil, fmt.Errorf("%q: gradient codec: %v", spec, err)
		}
		d.GradName = f[4]
	}
	return func() Compressor {
		c := d
		if grad != nil {
			c.Grad = grad()
		}
		return &c
	}, nil
}

// Name is the codec's full spec, every field given.
func (d *Delta) Name() string {
	g := d.GradName
	if d.Grad == nil {
		g = "delta"
	}
	b := strconv.Itoa(d.Bits)
	if d.Bits == 0 {
		b = "r"
	}
	return fmt.Sprintf("delta:%s:%g:%d:%s", b, d.Threshold, d.MaxStale, g)
}

// BitsAt is the bit width of a message at ratio: Bits, or with Bits 0 the
// widest of 1, 2, 4, 8 and 32 bits within 32/ratio (r ≥ 32: 1 bit, 16: 2,
// 8: 4, 2 and 4: 8, below 2: 32, exact), so that a ratio schedule such as
// step:16:4:34:2 widens the codes from 2 to 4 to 8 bits as training goes.
func (d *Delta) BitsAt(ratio float64) int {
	if d.Bits != 0 {
		return d.Bits
	}
	if !(ratio >= 2) {
		return 32
	}
	for _, b := range []int{8, 4, 2} {
		if float64(b)*ratio <= 32 {
			return b
		}
	}
	return 1
}

// FixedRatio is 0: the ratio a message achieves depends on the rows.
func (d *Delta) FixedRatio(int) float64 { return 0 }

// Caps: streaming (whole messages of variable size, in step order), in
// pieces unless another codec codes the gradients.
func (d *Delta) Caps() Caps {
	c := Caps{Streaming: d}
	if d.Grad == nil {
		c.Pieces = d // in pieces (deltapieces.go)
	}
	return c
}

// rowLayout: the bitmap, then each sent row after its 4-byte minimum and
// step (none for exact rows); the gradient codec's layout where it codes
// the gradients.
func (d *Delta) rowLayout(rows, width int, ratio float64, backward bool) (prefix, rb, header int) {
	if backward && d.Grad != nil {
		if g, ok := d.Grad.(rowLayouter); ok {
			return g.rowLayout(rows, width, ratio, backward)
		}
		return 0, 0, 0
	}
	if bits := d.BitsAt(ratio); bits != 32 {
		return (rows + 7) / 8, rowBytes(bits, width), deltaHeader
	}
	return 0, 0, 0
}

// rawHeader: the low bytes of a row's bfloat16 minimum and step (bytes 0
// and 2), their mantissas' low bits, are all but random, and an entropy
// stage sends them as they are; the gradient codec's where it codes the
// gradients (none).
func (d *Delta) rawHeader(backward bool) uint64 {
	if backward && d.Grad != nil {
		return 0
	}
	return 1<<0 | 1<<2
}

// rowBytes is the size of a sent row.
func rowBytes(bits, width int) int {
	if bits == 32 {
		return 4 * width
	}
	return deltaHeader + (width*bits+7)/8
}

// stream returns the state of key's stream for messages of rows×width,
// made anew (nothing sent yet) if the stream is new or its shape changed:
// both ends see the same shapes, so they remake it at the same message.
func (d *Delta) stream(key Key, recv bool, rows, width int) *deltaStream {
	if d.streams == nil {
		d.streams = map[streamEnd]*deltaStream{}
	}
	id := streamEnd{streamOf(key), recv}
	s := d.streams[id]
	half := d.BF16
	if s == nil || s.rows != rows || s.width != width || s.bf16 != half {
		if s != nil {
			memacct.Add(memacct.Communication, -s.bytes())
		}
		s = newDeltaStream(rows, width, half)
		for i := range s.skipped {
			s.skipped[i] = -1
		}
		d.streams[id] = s
	}
	return s
}

// Encode appends the message of x's rows and updates the stream's
// reconstruction as the receiver will.
func (d *Delta) Encode(dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte {
	if key.Backward && d.Grad != nil {
		return d.Grad.Encode(dst, x, rows, width, ratio, key)
	}
	if rows > 0 && width > 0 {
		_ = x[rows*width-1] // x holds every row: the kernels read it unchecked, the Go loops within its capacity
	}
	dst, m := d.beginEncode(dst, rows, width, ratio, key)
	d.encodePart(dst, &m, x[:rows*width], 0, rows)
	return d.endEncode(dst, &m)
}

// deltaMessage is a message being encoded: its stream, its bit width and
// row size, where its bitmap starts and where its next row goes, and
// whether every row is sent and coded by the kernels (all).
type deltaMessage struct {
	s         *deltaStream
	bits, rb  int
	start, at int
	all       bool
}

// beginEncode makes room in dst for a message of rows×width, its bitmap
// cleared, or set where every row is sent.
func (d *Delta) beginEncode(dst []byte, rows, width int, ratio float64, key Key) ([]byte, deltaMessage) {
	s := d.stream(key, false, rows, width)
	bits := d.BitsAt(ratio)
	rb := rowBytes(bits, width)
	start, nb := len(dst), (rows+7)/8
	dst = slices.Grow(dst, nb+rows*rb)[:start+nb+rows*rb]
	clear(dst[start : start+nb])
	if cap(d.diff) < width {
		d.diff = make([]float32, width)
	}
	m := deltaMessage{s: s, bits: bits, rb: rb, start: start, at: start + nb,
		all: deltaKernel != deltaGo && d.Threshold == 0 && bits != 32 && rows > 0 && width > 0}
	if m.all {
		// Every row is sent: the kernel codes them one after another.
		for i := range nb {
			dst[start+i] = 0xff
		}
		if rows%8 != 0 {
			dst[start+nb-1] = 1<<(rows%8) - 1
		}
	}
	return dst, m
}

// encodePart codes rows [lo, hi) of m's message, x holding them, after
// the rows before lo.
func (d *Delta) encodePart(dst []byte, m *deltaMessage, x []float32, lo, hi int) {
	s, width := m.s, m.s.width
	switch {
	case hi <= lo:
	case s.bf16:
		m.at = d.encodeBF16(dst, m, x, lo, hi)
	case m.all:
		_, _, _ = x[(hi-lo)*width-1], s.recon[hi*width-1], dst[m.at+(hi-lo)*m.rb-1]
		deltaEncodeRows(&dst[m.at], &x[0], &s.recon[lo*width], hi-lo, width, m.bits)
		m.at += (hi - lo) * m.rb
	default:
		m.at = d.encodeRows(dst, m.start, m.at, x, s.recon[lo*width:hi*width], s.skipped[lo:hi], lo, width, m.bits)
	}
}

// endEncode ends m's message: every row coded.
func (d *Delta) endEncode(dst []byte, m *deltaMessage) []byte {
	if m.all {
		clear(m.s.skipped)
	}
	return dst[:m.at]
}

// encodeRows codes rows first, first+1, … of a message one at a time, as
// many as skipped has (x's and recon's rows, the stream's skip counts of
// them), marking the rows it sends in the bitmap at dst[start:] and
// writing them from dst[at:]; it returns where the rows it wrote end.
func (d *Delta) encodeRows(dst []byte, start, at int, x, recon []float32, skipped []int32, first, width, bits int) int {
	rb := rowBytes(bits, width)
	diff := d.diff[:width]
	for i := range skipped {
		row, rec := x[i*width:(i+1)*width], recon[i*width:(i+1)*width]
		stale := skipped[i] < 0 || d.MaxStale > 0 && int(skipped[i])+1 >= d.MaxStale
		if !stale && d.Threshold > 0 && small(row, rec, d.Threshold) {
			skipped[i]++
			continue
		}
		r := first + i
		dst[start+r/8] |= 1 << (r % 8)
		if bits == 32 {
			AppendFloats(dst[at:at], row)
			copy(rec, row)
		} else {
			encodeDeltaRow(dst[at:at+rb], row, rec, diff, bits)
		}
		at += rb
		skipped[i] = 0
	}
	return at
}

// small reports whether ‖row − rec‖ < threshold·‖row‖, the difference
// rounded to float32 and the norms summed in float64 in order.
func small(row, rec []float32, threshold float64) bool {
	var dd, xx float64
	rec = rec[:len(row)]
	for j, v := range row {
		d := float64(v - rec[j])
		dd += d * d
		xx += float64(v) * float64(v)
	}
	return dd < threshold*threshold*xx
}

// deltaHeader is the size of a quantised row's header: its minimum and
// step as bfloat16s.
const deltaHeader = 4

func fromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// bf16Down and bf16Up round f to a bfloat16 towards −∞ and +∞.
func bf16Down(f float32) uint16 {
	b := math.Float32bits(f)
	t := uint16(b >> 16)
	if b&0xffff != 0 && b>>31 == 1 && b&0x7fffffff <= 0x7f800000 { // negative, not NaN: away from 0
		t++
	}
	return t
}

func bf16Up(f float32) uint16 { return bf16Down(-f) ^ 0x8000 }

// Decode applies the message to the stream's reconstruction and writes
// the reconstruction to out. A malformed message changes nothing.
func (d *Delta) Decode(out []float32, rows, width int, ratio float64, key Key, src []byte) error {
	if key.Backward && d.Grad != nil {
		return d.Grad.Decode(out, rows, width, ratio, key, src)
	}
	if rows > 0 && width > 0 {
		_ = out[rows*width-1] // out holds every row
	}
	nb, bits, all, err := d.check(rows, width, ratio, src)
	if err != nil {
		return err
	}
	s := d.stream(key, true, rows, width)
	if s.bf16 {
		d.decodeBF16(out, s, src, nb, bits, all)
		return nil
	}
	if all {
		// Every row is sent: the kernel decodes them one after another,
		// into the reconstruction and out at once, a block of rows at a
		// time (where a row ends in a partial block of 16 values, it takes
		// a block's even rows before its odd ones, which then are still in
		// cache), out around the cache if the message is large.
		rb, chunk := rowBytes(bits, width), blockRows(width)
		stream := streamsOut(rows, width)
		for lo := 0; lo < rows; lo += chunk {
			hi := min(lo+chunk, rows)
			deltaApplyRows(&s.recon[lo*width], &out[lo*width], &src[nb+lo*rb], hi-lo, width, bits, stream)
		}
		clear(s.skipped)
		return nil
	}
	applyRows(s.recon, s.skipped, src, 0, nb, width, bits)
	copy(out[:rows*width], s.recon)
	return nil
}

// deltaStreamOut is the smallest message, in bytes of decoded rows,
// whose rows Decode writes around the cache (non-temporal stores, in the
// AVX-512 kernel): rows of a message that size leave a core's cache
// before the layer reads them anyway, and a store that goes straight to
// memory does not first read the line it writes, a third of the memory
// traffic of decoding into out.
const deltaStreamOut = 2 << 20

// streamsOut says whether Decode writes a message of rows×width around
// the cache (deltaStreamOut).
func streamsOut(rows, width int) bool { return 4*rows*width >= deltaStreamOut }

// check checks that src is a message of rows×width at ratio, and returns
// the size of its bitmap, its bit width and whether every row is sent and
// decoded by the kernels (all).
func (d *Delta) check(rows, width int, ratio float64, src []byte) (nb, bits int, all bool, err error) {
	nb = (rows + 7) / 8
	if len(src) < nb {
		return 0, 0, false, sizeError("delta", len(src), nb)
	}
	sent := 0
	for _, b := range src[:nb] {
		sent += mbits.OnesCount8(b)
	}
	if rows%8 != 0 && nb > 0 && src[nb-1]>>(rows%8) != 0 {
		return 0, 0, false, errors.New("compress: delta message marks rows past its end")
	}
	bits = d.BitsAt(ratio)
	if want := nb + sent*rowBytes(bits, width); len(src) != want {
		return 0, 0, false, sizeError("delta", len(src), want)
	}
	return nb, bits, deltaKernel != deltaGo && bits != 32 && sent == rows && rows > 0 && width > 0, nil
}

// applyRows adds rows first, first+1, … of a message to recon's rows, as
// many as skipped has, one at a time: those the bitmap src[:] marks, read
// from src[at:] on, and counts the others' skips; it returns where the
// rows it read end.
func applyRows(recon []float32, skipped []int32, src []byte, first, at, width, bits int) int {
	rb := rowBytes(bits, width)
	for i := range skipped {
		if r := first + i; src[r/8]>>(r%8)&1 == 0 {
			skipped[i]++
			continue
		}
		if rec := recon[i*width : (i+1)*width]; bits == 32 {
			readFloats(rec, src[at:at+rb])
		} else {
			applyDeltaRow(rec, src[at:at+rb], bits)
		}
		skipped[i] = 0
		at += rb
	}
	return at
}

// deltaStateMagic starts a delta codec's state of float32
// reconstructions, deltaStateMagicBF16 one whose codec keeps them in
// bfloat16 (BF16): a codec never reads one form as the other.
const (
	deltaStateMagic     = "GRAFTDL1"
	deltaStateMagicBF16 = "GRAFTDB1"
)

// deltaFlagBF16 marks, in a stream's flags, reconstructed values stored
// as bfloat16s (2 bytes each) rather than float32s.
const deltaFlagBF16 = 4

// StreamState is every stream's shape, reconstruction and skip counts, in
// the order of their ids, little-endian: after the magic the number of
// streams, then each stream's layer, sender, receiver, flags (1:
// backward, 2: the receiving end, deltaFlagBF16: bfloat16 values), rows
// and width as 8-byte integers, its values and its skip counts (4 bytes).
func (d *Delta) StreamState() ([]byte, error) {
	ids := make([]streamEnd, 0, len(d.streams))
	for id := range d.streams {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b streamEnd) int {
		return cmpInts(a.Layer, b.Layer, a.From, b.From, a.To, b.To, b2i(a.Backward), b2i(b.Backward), b2i(a.Recv), b2i(b.Recv))
	})
	magic := deltaStateMagic
	if d.BF16 {
		magic = deltaStateMagicBF16
	}
	b := binary.LittleEndian.AppendUint64([]byte(magic), uint64(len(ids)))
	for _, id := range ids {
		s := d.streams[id]
		flags := b2i(id.Backward) | 2*b2i(id.Recv)
		if s.bf16 {
			flags |= deltaFlagBF16
		}
		for _, v := range []int{id.Layer, id.From, id.To, flags, s.rows, s.width} {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		if s.bf16 {
			b = appendHalfs(b, s.half)
		} else {
			b = AppendFloats(b, s.recon)
		}
		for _, k := range s.skipped {
			b = binary.LittleEndian.AppendUint32(b, uint32(k))
		}
	}
	return b, nil
}

// RestoreStreams replaces every stream's state with state's (nil: none).
// A codec with BF16 takes a state of float32 reconstructions too (one
// saved before the codec kept them in bfloat16), rounding each value to
// the nearest bfloat16 as a message would; a codec without it refuses a
// state of bfloat16 ones.
func (d *Delta) RestoreStreams(state []byte) error {
	streams, err := d.readDeltaStreams(state)
	if err != nil {
		releaseStreams(streams)
		return err
	}
	releaseStreams(d.streams)
	d.streams = streams
	return nil
}

// readDeltaStreams reads StreamState's form; on an error it returns what
// it read so far, for the caller to release.
func (d *Delta) readDeltaStreams(state []byte) (map[streamEnd]*deltaStream, error) {
	streams := map[streamEnd]*deltaStream{}
	if state == nil {
		return streams, nil
	}
	bad := errors.New("compress: malformed delta codec state")
	if len(state) < len(deltaStateMagic)+8 {
		return streams, bad
	}
	flagMask := 3
	switch string(state[:len(deltaStateMagic)]) {
	case deltaStateMagic:
	case deltaStateMagicBF16:
		if !d.BF16 {
			return streams, errors.New("compress: the delta codec state keeps its reconstructions in bfloat16 (a run at bf16 precision); this codec keeps float32 ones")
		}
		flagMask |= deltaFlagBF16
	default:
		return streams, bad
	}
	b := state[len(deltaStateMagic):]
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	for range n {
		if len(b) < 48 {
			return streams, bad
		}
		var v [6]int
		for k := range v {
			v[k] = int(int64(binary.LittleEndian.Uint64(b[8*k:])))
		}
		b = b[48:]
		rows, width, flags := v[4], v[5], v[3]
		vb := 4 // bytes a value
		if flags&deltaFlagBF16 != 0 {
			vb = 2
		}
		// rows×(vb·width+4) bytes must remain: compared by division, so no
		// product of corrupt sizes overflows.
		if rows < 0 || width < 0 || rows > len(b) || width > len(b) || rows > 0 && vb*width+4 > len(b)/rows || flags&^flagMask != 0 {
			return streams, bad
		}
		id := streamEnd{StreamID{Layer: v[0], From: v[1], To: v[2], Backward: flags&1 != 0}, flags&2 != 0}
		half := d.BF16
		if streams[id] != nil || vb == 2 && !half {
			return streams, bad
		}
		s := newDeltaStream(rows, width, half)
		streams[id] = s
		switch {
		case vb == 2:
			readHalfs(s.half, b)
		case half:
			roundFloats(s.half, b)
		default:
			readFloats(s.recon, b)
		}
		b = b[vb*rows*width:]
		for i := range s.skipped {
			s.skipped[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*rows:]
	}
	if len(b) != 0 {
		return streams, bad
	}
	return streams, nil
}

// cmpInts compares pairs (a₀, b₀), (a₁, b₁), … in order.
func cmpInts(pairs ...int) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := pairs[i] - pairs[i+1]; c != 0 {
			return c
		}
	}
	return 0
}
