package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"unsafe"
)

// Key names one message: the forward direction's sender and receiver, the
// training step and the layer. Backward marks the gradient message that
// answers it.
type Key struct {
	Seed     uint64
	Step     int
	Layer    int
	From, To int
	Backward bool
}

// hash mixes the key (optionally without the direction) and extra words
// into 64 well-distributed bits.
func (k Key) hash(withDirection bool, extra ...uint64) uint64 {
	h := mix(k.Seed ^ 0x9e3779b97f4a7c15)
	for _, v := range []uint64{uint64(k.Step), uint64(k.Layer), uint64(k.From), uint64(k.To)} {
		h = mix(h ^ v)
	}
	if withDirection && k.Backward {
		h = mix(h ^ 0xb5ad4eceda1ce2a9)
	}
	for _, v := range extra {
		h = mix(h ^ v)
	}
	return h
}

// mix is splitmix64's finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// stream is a small counter-based generator: cheap, and seekable by key.
type stream struct{ s uint64 }

func (r *stream) next() uint64 { r.s += 0x9e3779b97f4a7c15; return mix(r.s) }

// Compressor encodes a message of rows×width float32 values (row-major) at
// a compression ratio r ≥ 1 and decodes it back. A message goes row by
// row, each row's encoding the same size: rows [a, b) of an n-row message
// are its bytes [a·len/n, b·len/n), which Decode (with the same key and
// ratio) turns into those rows, so a receiver may decode a message in
// pieces; a codec whose Caps say Streaming or Whole sends whole messages
// instead, of sizes that depend on their rows. A value is used by one
// goroutine at a time (it keeps scratch space); make one per worker.
type Compressor interface {
	Name() string
	// Encode appends the encoding of x to dst and returns it.
	Encode(dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte
	// Decode overwrites out (rows×width) from src; what was not sent is 0.
	Decode(out []float32, rows, width int, ratio float64, key Key, src []byte) error
	// FixedRatio is the ratio the compressor always achieves regardless of
	// the schedule (bf16: 2), or 0 when it follows the requested ratio.
	FixedRatio(width int) float64
	// Caps declares what the messages allow beyond Encode and Decode.
	Caps() Caps
}

// Caps are what a compressor's messages allow beyond Encode and Decode.
// A compressor declares them once; an exchange chooses how to encode when
// it is built, from them.
type Caps struct {
	// RowByRow: each row encodes alone, from the row, the width, the ratio
	// and the key, so a message encoded a piece of rows at a time (with
	// the same key) is the same bytes as the message encoded whole. Every
	// compressor but the stochastic quantisers, whose random numbers run
	// on through a message, encodes row by row.
	RowByRow bool
	// Rows, when set, says that a message is its rows' encodings one after
	// another, each of a size independent of the key. A sender can then
	// encode a row several peers need once and copy its bytes into each
	// message; top-k, whose encoding costs far more than a copy, does.
	Rows RowCoder
	// Grad, when set, sends a forward message's gradient at the columns
	// that message kept (see GradCoder).
	Grad GradCoder
	// Streaming, when set, says that the codec keeps state per stream of
	// messages (a Key without its step and seed: a layer, a direction, a
	// sender and a receiver) that both ends update with every message, as
	// delta coding does. Each message must then be encoded once, whole,
	// and decoded once, whole, in step order; its size depends on the
	// rows. Streaming gives the state a checkpoint keeps.
	Streaming Streaming
	// Whole says that each message is encoded once, whole, and decoded
	// once, whole, and that its size depends on what it holds, as an
	// entropy stage's (Entropy) do; Streaming implies it.
	Whole bool
	// Lossless says that Decode gives back the values encoded, bit for
	// bit, whatever the ratio: none, and an entropy stage around it.
	Lossless bool
	// Pieces, when set, encodes a whole message from rows it asks for a
	// piece at a time and hands the rows it decodes over a piece at a
	// time (see Pieced): delta coding, and an entropy stage around it.
	Pieces Pieced
}

// Pieced is what a codec whose Caps set Pieces does beyond a Compressor.
// Its messages are encoded and decoded whole, but the rows need not be
// in memory whole: EncodePieces asks for a cache-sized piece of rows at a
// time, which an exchange gathers (or computes) as it is asked, and
// DecodePieces hands over a piece of decoded rows at a time, which an
// exchange adds where they go while they are in cache. The messages, and
// any state the codec keeps, are Encode's and Decode's of the same rows,
// bit for bit.
type Pieced interface {
	// EncodePieces appends the message Encode would append for the
	// rows×width rows fill writes: fill(lo, hi, buf) writes rows [lo, hi)
	// into buf ((hi−lo)·width values), for every row once, in order.
	EncodePieces(dst []byte, rows, width int, ratio float64, key Key, fill func(lo, hi int, buf []float32)) []byte
	// DecodePieces decodes src as Decode would and hands over the rows
	// Decode would write, in order: put(lo, hi, rows) for every row once,
	// rows holding rows [lo, hi) ((hi−lo)·width values), which put reads
	// before it returns and does not write. A malformed message is an
	// error before any put, and changes nothing.
	DecodePieces(rows, width int, ratio float64, key Key, src []byte, put func(lo, hi int, rows []float32)) error
}

// RowCoder sizes the rows of a compressor whose Caps set Rows.
type RowCoder interface {
	RowBytes(width int, ratio float64) int
}

// GradCoder is a Compressor whose backward message follows its forward
// one: the gradient of a forward message's rows is sent at the columns
// that message kept, which both ends know from it. No columns travel, and
// an exchange that uses it is the exact adjoint of its forward pass (the
// gradient of what was sent), as truncation and subspace are by their
// keys. top-k, which picks columns by the values, is one.
//
// Both ends keep only the columns of a forward message (Columns), not the
// message: a fraction of its size, and all the backward pass reads of it.
// Columns, like the gradient messages, go row by row.
type GradCoder interface {
	// Columns appends the columns each row of the forward message fwd
	// (rows rows of width at ratio) kept, in the form EncodeGrad and
	// DecodeGrad take. It checks fwd's size only.
	Columns(dst, fwd []byte, rows, width int, ratio float64) ([]byte, error)
	// EncodeGrad appends the entries of g (rows×width) at cols' columns;
	// cols must come from Columns of a message Decode accepts (it panics
	// on columns that do not fit the row).
	EncodeGrad(dst []byte, g []float32, rows, width int, ratio float64, cols []byte) []byte
	// DecodeGrad overwrites out (rows×width) with src's entries at cols'
	// columns and zeros elsewhere; bad columns are an error.
	DecodeGrad(out []float32, rows, width int, ratio float64, cols, src []byte) error
}

// KeptColumns is how many of width columns a ratio keeps: floor(width/r),
// the rule of the VARCO authors' code (which may keep none).
func KeptColumns(width int, ratio float64) int {
	if !(ratio > 1) { // also NaN
		return width
	}
	return int(float64(width) / ratio)
}

func sizeError(name string, got, want int) error {
	return fmt.Errorf("compress: %s message of %d bytes, want %d", name, got, want)
}

func init() {
	Register("none", func() Compressor { return none{} })
	Register("truncate", func() Compressor { return &columns{random: false} })
	Register("subspace", func() Compressor { return &columns{random: true} })
}

// none sends float32 values as they are.
type none struct{}

func (none) Name() string           { return "none" }
func (none) FixedRatio(int) float64 { return 1 }
func (none) Caps() Caps             { return Caps{RowByRow: true, Lossless: true} }

func (none) Encode(dst []byte, x []float32, rows, width int, _ float64, _ Key) []byte {
	return AppendFloats(dst, x[:rows*width])
}
func (none) Decode(out []float32, rows, width int, _ float64, _ Key, src []byte) error {
	if len(src) != 4*rows*width {
		return sizeError("none", len(src), 4*rows*width)
	}
	readFloats(out[:rows*width], src)
	return nil
}

// AppendFloats appends x little-endian, as messages carry float32s: one
// copy on a little-endian host.
func AppendFloats(dst []byte, x []float32) []byte {
	start := len(dst)
	dst = slices.Grow(dst, 4*len(x))[:start+4*len(x)]
	if littleEndian {
		copy(dst[start:], FloatBytes(x))
		return dst
	}
	for i, v := range x {
		binary.LittleEndian.PutUint32(dst[start+4*i:], math.Float32bits(v))
	}
	return dst
}

// ReadFloats appends the little-endian float32s of b (len(b)/4 of them)
// to dst: AppendFloats' inverse.
func ReadFloats(dst []float32, b []byte) []float32 {
	n := len(b) / 4
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	readFloats(dst[start:], b)
	return dst
}

// readFloats fills out from the first 4·len(out) bytes of src.
func readFloats(out []float32, src []byte) {
	if littleEndian {
		copy(FloatBytes(out), src[:4*len(out)])
		return
	}
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// littleEndian reports whether float32s are stored as the wire order.
var littleEndian = func() bool {
	v := uint32(1)
	return *(*byte)(unsafe.Pointer(&v)) == 1
}()

// HostIsWireOrder reports whether this host stores float32s as uncompressed
// messages carry them (little-endian), so that FloatBytes of a row block is
// its message and a message can be received straight into FloatBytes of
// the rows it fills.
var HostIsWireOrder = littleEndian

// FloatBytes is x's memory as bytes, without a copy (len = cap = 4·len(x)).
func FloatBytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// HalfBytes is x's memory as bytes, without a copy (len = cap =
// 2·len(x)): bfloat16 rows as they travel uncompressed, in the host's
// order, which is the wire's where HostIsWireOrder.
func HalfBytes(x []uint16) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 2*len(x))
}

// Halfs is b (of even length) as the bfloat16s HalfBytes made it, without
// a copy.
func Halfs(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// columns keeps k = floor(width/r) columns of every row: the first k
// (truncate, what the VARCO authors ran; the receiver zero-pads), or a
// fresh random subset per message scaled by width/k so that the decoded
// message is an unbiased estimate (subspace).
type columns struct {
	random bool
	cols   []int // scratch: the kept columns, ascending
	perm   []int
	mask   []byte // the kept columns as a bitmap

	// What cols and mask were made for, so that the pieces of a message
	// (encoded or decoded a few rows at a time) draw them once.
	made      bool
	madeKey   Key
	madeWidth int
	madeRatio float64
	madeScale float32
}

func (c *columns) Name() string {
	if c.random {
		return "subspace"
	}
	return "truncate"
}

func (c *columns) FixedRatio(int) float64 { return 0 }
func (*columns) Caps() Caps               { return Caps{RowByRow: true} }

// selection returns the kept columns and the scale applied to them. It
// ignores the direction, so a gradient message selects what its forward
// message selected: that makes the backward pass the exact adjoint.
func (c *columns) selection(width int, ratio float64, key Key) ([]int, float32) {
	key.Backward = false // the selection ignores the direction
	if c.made && key == c.madeKey && width == c.madeWidth && ratio == c.madeRatio {
		return c.cols, c.madeScale
	}
	cols, scale := c.draw(width, ratio, key)
	c.made, c.madeKey, c.madeWidth, c.madeRatio, c.madeScale = true, key, width, ratio, scale
	c.mask = c.mask[:0] // columnMask remakes it
	return cols, scale
}

func (c *columns) draw(width int, ratio float64, key Key) ([]int, float32) {
	k := KeptColumns(width, ratio)
	c.cols = c.cols[:0]
	if !c.random || k == width {
		for j := range k {
			c.cols = append(c.cols, j)
		}
		return c.cols, 1
	}
	if cap(c.perm) < width {
		c.perm = make([]int, width)
	}
	perm := c.perm[:width]
	for j := range perm {
		perm[j] = j
	}
	r := stream{key.hash(false)}
	for j := range k { // partial Fisher–Yates
		p := j + int(r.next()%uint64(width-j))
		perm[j], perm[p] = perm[p], perm[j]
	}
	c.cols = append(c.cols, perm[:k]...)
	sort.Ints(c.cols)
	return c.cols, float32(width) / float32(k)
}

// Encode sends the kept columns of every row. subspace sends them
// unscaled (the receiver scales), so that on AVX-512 a row is one masked
// pack, as top-k's bitmap rows are.
func (c *columns) Encode(dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte {
	cols, _ := c.selection(width, ratio, key)
	k := len(cols)
	if k == width {
		return AppendFloats(dst, x[:rows*width])
	}
	start := len(dst)
	dst = slices.Grow(dst, 4*rows*k)[:start+4*rows*k]
	if k == 0 {
		return dst
	}
	out := dst[start:]
	if !c.random { // truncate: the first k columns
		for i := range rows {
			AppendFloats(out[4*i*k:4*i*k], x[i*width:i*width+k])
		}
		return dst
	}
	if packRows(out, 4*k, float32Bits(x), rows, width, c.columnMask(width), 0, k) >= 0 {
		panic("compress: subspace's mask names other than k columns")
	}
	return dst
}

// columnMask returns the columns selection drew last (c.cols) as a bitmap
// of width columns.
func (c *columns) columnMask(width int) []byte {
	if len(c.mask) == (width+7)/8 { // made for cols (selection resets it)
		return c.mask
	}
	c.mask = slices.Grow(c.mask[:0], (width+7)/8)[:(width+7)/8]
	clear(c.mask)
	for _, j := range c.cols {
		c.mask[j/8] |= 1 << (j % 8)
	}
	return c.mask
}

func (c *columns) Decode(out []float32, rows, width int, ratio float64, key Key, src []byte) error {
	cols, scale := c.selection(width, ratio, key)
	if want := 4 * rows * len(cols); len(src) != want {
		return sizeError(c.Name(), len(src), want)
	}
	k := len(cols)
	if k == width {
		readFloats(out[:rows*width], src)
		return nil
	}
	if k == 0 {
		clear(out[:rows*width])
		return nil
	}
	if !c.random { // truncate
		for i := range rows {
			row := out[i*width : (i+1)*width]
			readFloats(row[:k], src[4*i*k:4*(i+1)*k])
			clear(row[k:])
		}
		return nil
	}
	if unpackRows(out, c.columnMask(width), 0, src, 4*k, rows, width, k, scale) >= 0 {
		panic("compress: subspace's mask names other than k columns")
	}
	return nil
}
