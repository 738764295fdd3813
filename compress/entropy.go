package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// Entropy is an entropy-coding stage around another codec: it encodes a
// message with the codec it wraps, then codes the message's bytes without
// loss, so that what a receiver decodes is the wrapped codec's message
// bit for bit, and training with entropy:CODEC is training with CODEC at
// fewer bytes.
//
// A quantiser's codes are far from uniform (rows of zeros, ReLU's zero
// floor, gradients that vanish away from the training nodes), which the
// packed codes do not exploit; Huffman coding of the bytes (huff0, in
// blocks of 128 KiB, each with its own table) does. A codec whose
// messages are rows of one layout (a quantiser's, delta coding's:
// rowLayouter) has each byte of its row headers coded as a stream of its
// own and its codes as another, and its rows of zeros left out, a bitmap
// saying which, where there are enough of them to pay for it. Other
// messages are coded whole, and zstd's fastest level, which also finds
// runs and repeats, is tried where their bytes are that redundant
// (Huffman below half their size). A message takes the smallest of these
// and of its raw bytes.
//
// The coded message is empty for an empty message, else one byte saying
// how it is coded, then: the raw message (entropyRaw: so a message never
// grows by more than a byte), or its length and either the huff0 blocks
// of its streams (entropyHuff; entropySparse: the prefix, the bitmap of
// the rows left out, then the other rows' streams) or one zstd frame.
// Each huff0 block is a byte saying how it is coded and then its bytes as
// they are (blockRaw), its one repeated byte (blockRLE), or the length
// and bytes of its huff0 4-stream coding (blockHuff).
//
// Messages of an Entropy codec are encoded and decoded whole and their
// size depends on what they hold (Caps.Whole). Codecs whose gradients
// follow their forward messages' columns (top-k) cannot be wrapped.
type Entropy struct {
	Inner Compressor

	msg    []byte // scratch: the wrapped codec's message
	split  []byte // scratch: a message split into its streams (rowLayout)
	zero   []byte // scratch: the bitmap of a split message's all-zero rows
	sparse []byte // scratch: a split message without those rows
	raw    []byte // scratch: a message joined, or its streams decoded
	huff   []byte // scratch: a huff0 coding
	block  []byte // scratch: a block's huff0 coding
	segs   []int
	hs     huff0.Scratch // reads the blocks' tables
	hc     huffCoder     // codes the blocks
	zenc   *zstd.Encoder
	zdec   *zstd.Decoder
}

// EntropyUsage is the form of an entropy-coded codec's spec.
const EntropyUsage = "entropy[:CODEC]"

func init() {
	RegisterFamily("entropy", EntropyUsage, ParseEntropy)
}

// ParseEntropy reads an entropy-coded codec's spec, entropy[:CODEC], with
// CODEC any codec spec (quant4, delta:2:0:0) but another entropy stage or
// a codec whose gradients follow its forward columns (topk); entropy alone
// is entropy:none, the rows' float32s coded without loss.
func ParseEntropy(spec string) (func() Compressor, error) {
	inner, ok := strings.CutPrefix(spec, "entropy:")
	if spec == "entropy" {
		inner, ok = "none", true
	}
	if !ok || inner == "" {
		return nil, fmt.Errorf("%q: want %s, a codec spec after entropy:", spec, EntropyUsage)
	}
	if inner == "entropy" || strings.HasPrefix(inner, "entropy:") {
		return nil, fmt.Errorf("%q: one entropy stage is enough", spec)
	}
	make, err := Factory(inner)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", spec, err)
	}
	if make().Caps().Grad != nil {
		return nil, fmt.Errorf("%q: %s sends gradients at its forward messages' columns, which an entropy stage would hide from the exchange", spec, inner)
	}
	return func() Compressor { return &Entropy{Inner: make()} }, nil
}

// Name is "entropy:" and the wrapped codec's name.
func (e *Entropy) Name() string { return "entropy:" + e.Inner.Name() }

// FixedRatio is 0: the size depends on what the message holds.
func (e *Entropy) FixedRatio(int) float64 { return 0 }

// Caps: whole messages, and the wrapped codec's stream state if it keeps
// one; lossless if the wrapped codec is; in pieces if it goes in pieces.
func (e *Entropy) Caps() Caps {
	inner := e.Inner.Caps()
	c := Caps{Whole: true, Streaming: inner.Streaming, Lossless: inner.Lossless}
	if inner.Pieces != nil {
		c.Pieces = e
	}
	return c
}

// Encode appends the entropy coding of the wrapped codec's message of x.
func (e *Entropy) Encode(dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte {
	e.msg = e.Inner.Encode(e.msg[:0], x, rows, width, ratio, key)
	return e.code(dst, rows, width, ratio, key)
}

// EncodePieces is Encode of the rows fill writes, which the wrapped codec
// asks for a piece at a time (Pieced).
func (e *Entropy) EncodePieces(dst []byte, rows, width int, ratio float64, key Key, fill func(lo, hi int, buf []float32)) []byte {
	e.msg = e.Inner.Caps().Pieces.EncodePieces(e.msg[:0], rows, width, ratio, key, fill)
	return e.code(dst, rows, width, ratio, key)
}

// code appends the entropy coding of the wrapped codec's message e.msg:
// in streams, its all-zero rows left out where that pays (packRows), if
// the codec declares its rows' layout, else whole (pack).
func (e *Entropy) code(dst []byte, rows, width int, ratio float64, key Key) []byte {
	l := e.layout(len(e.msg), rows, width, ratio, key)
	if l.rowBytes == 0 {
		return e.pack(dst, e.msg, l)
	}
	var raw uint64
	if rh, ok := e.Inner.(rawHeaderer); ok {
		raw = rh.rawHeader(key.Backward)
	}
	return e.packRows(dst, e.msg, l, raw)
}

// Decode decodes src's entropy coding and the wrapped codec's message in
// it.
func (e *Entropy) Decode(out []float32, rows, width int, ratio float64, key Key, src []byte) error {
	if err := e.unpackMessage(src, rows, width, ratio, key); err != nil {
		return err
	}
	return e.Inner.Decode(out, rows, width, ratio, key, e.split)
}

// DecodePieces is Decode, the wrapped codec handing over its rows a piece
// at a time (Pieced).
func (e *Entropy) DecodePieces(rows, width int, ratio float64, key Key, src []byte, put func(lo, hi int, rows []float32)) error {
	if err := e.unpackMessage(src, rows, width, ratio, key); err != nil {
		return err
	}
	return e.Inner.Caps().Pieces.DecodePieces(rows, width, ratio, key, e.split, put)
}

// unpackMessage decodes src's entropy coding into e.split: the wrapped
// codec's message.
func (e *Entropy) unpackMessage(src []byte, rows, width int, ratio float64, key Key) error {
	var err error
	e.split, err = e.unpack(e.split[:0], src, maxMessage(rows, width), func(n int) rowLayout {
		return e.layout(n, rows, width, ratio, key)
	})
	return err
}

// maxMessage bounds the size of a wrapped codec's message of rows×width,
// so that a corrupt length cannot make a decoder allocate without limit:
// every codec sends at most the rows as float32s and a few bytes a row
// (delta's exact rows and bitmap; a quantiser's header is 8 bytes a row).
func maxMessage(rows, width int) int { return 4*rows*(width+4) + 64 }

// How a message, and a huff0 block, is coded.
const (
	entropyRaw    = 0
	entropyHuff   = 1
	entropyZstd   = 2
	entropySparse = 3

	blockRaw  = 0
	blockRLE  = 1
	blockHuff = 2

	huffBlock = 1 << 17 // ≤ huff0.BlockSizeMax
)

// pack appends the entropy coding of s, a message split by l, to dst:
// huff0 blocks of its streams, or one zstd frame of it where Huffman
// leaves under half its bytes and zstd fewer, or the bytes as they are.
func (e *Entropy) pack(dst, s []byte, l rowLayout) []byte {
	if len(s) == 0 {
		return dst
	}
	e.huff = e.huffman(e.huff[:0], entropyHuff, len(s), s, l.segments(e.segs[:0], len(s)), 0)
	best := e.huff
	if len(e.huff) < len(s)/2 {
		if z := e.zstd(s); len(z) < len(best) {
			best = z
		}
	}
	if len(best) >= len(s)+1 {
		return e.packRaw(dst, s, l)
	}
	return append(dst, best...)
}

// packRaw appends the message split by l into s as it is.
func (e *Entropy) packRaw(dst, s []byte, l rowLayout) []byte {
	at := len(dst) + 1
	dst = slices.Grow(append(dst, entropyRaw), len(s))[:at+len(s)]
	l.join(dst[at:], s)
	return dst
}

// packRows appends the entropy coding of msg, a message of layout l
// (rowBytes > 0), to dst: huff0 blocks of its streams, its all-zero rows
// left out where that pays (entropySparse, rowLayout.compact), or its
// bytes as they are. The streams of the header bytes raw marks (bit j:
// byte j, rawHeaderer) go as they are. zstd is not tried: what it finds
// in these messages and Huffman coding does not (runs of rows of zeros,
// the gradients of rows far from the training nodes) is what leaving the
// rows out removes.
func (e *Entropy) packRows(dst, msg []byte, l rowLayout, raw uint64) []byte {
	if len(msg) == 0 {
		return dst
	}
	e.split = l.split(e.split[:0], msg)
	k := (len(msg) - l.prefix) / l.rowBytes
	nb := (k + 7) / 8
	e.zero = slices.Grow(e.zero[:0], nb)[:nb]
	zeros := l.zeroRows(e.zero, e.split[l.prefix:], k)
	at := len(dst)
	if zeros*l.rowBytes <= nb { // every row, the header streams from the second on
		dst = e.huffman(dst, entropyHuff, len(msg), e.split, l.segments(e.segs[:0], len(msg)), raw<<1)
	} else { // the all-zero rows left out, the header streams from the third on, after the bitmap
		e.sparse = l.compact(e.sparse[:0], e.split, e.zero, k, zeros)
		dst = e.huffman(dst, entropySparse, len(msg), e.sparse, l.sparseSegments(e.segs[:0], k, zeros), raw<<2)
	}
	if len(dst)-at >= len(msg)+1 {
		return append(append(dst[:at], entropyRaw), msg...)
	}
	return dst
}

// huffman appends the huff0 coding of s (marker, the message's length n,
// blocks) to dst: each of the streams of sizes segs in blocks of its own,
// those raw marks (bit i: stream i) as they are.
func (e *Entropy) huffman(dst []byte, marker byte, n int, s []byte, segs []int, raw uint64) []byte {
	dst = binary.AppendUvarint(append(dst, marker), uint64(n))
	for i, n := range segs {
		seg := s[:n]
		s = s[n:]
		for b := range slices.Chunk(seg, huffBlock) {
			var out []byte
			err := huff0.ErrIncompressible
			if i >= 64 || raw>>i&1 == 0 {
				out, err = e.hc.compress(e.block[:0], b) // huff0.Compress4X's bytes
				e.block = out
			}
			switch {
			case err == huff0.ErrUseRLE:
				dst = append(dst, blockRLE, b[0])
			case err != nil: // incompressible (or too small to try)
				dst = append(append(dst, blockRaw), b...)
			default:
				dst = binary.AppendUvarint(append(dst, blockHuff), uint64(len(out)))
				dst = append(dst, out...)
			}
		}
	}
	return dst
}

// zstd returns the zstd coding (marker, length, frame) of s in scratch
// space.
func (e *Entropy) zstd(s []byte) []byte {
	if e.zenc == nil {
		var err error
		e.zenc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true), zstd.WithZeroFrames(true))
		if err != nil {
			panic("compress: zstd encoder: " + err.Error())
		}
	}
	z := binary.AppendUvarint(append(e.huff[len(e.huff):], entropyZstd), uint64(len(s)))
	return e.zenc.EncodeAll(s, z)
}

var errEntropy = errors.New("compress: malformed entropy-coded message")

// unpack appends the message src codes to dst; layout gives the layout of
// a message of n bytes. A message longer than max is an error.
func (e *Entropy) unpack(dst, src []byte, max int, layout func(n int) rowLayout) ([]byte, error) {
	if len(src) == 0 {
		return dst, nil
	}
	mode, src := src[0], src[1:]
	if mode == entropyRaw {
		if len(src) > max {
			return dst, errEntropy
		}
		return append(dst, src...), nil
	}
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(max) {
		return dst, errEntropy
	}
	src = src[k:]
	l := layout(int(n))
	var err error
	e.raw = e.raw[:0]
	rows := -1 // the rows of a message whose all-zero rows were left out
	switch mode {
	case entropyHuff:
		e.raw, src, err = e.unhuff(e.raw, src, l.segments(e.segs[:0], int(n)))
	case entropySparse:
		rows, src, err = e.unhuffSparse(src, int(n), l)
	case entropyZstd:
		e.raw, err = e.unzstd(e.raw, src, int(n))
		src = nil
	default:
		err = errEntropy
	}
	if err == nil && len(src) != 0 {
		err = errEntropy
	}
	if err != nil {
		return dst, err
	}
	at := len(dst)
	dst = slices.Grow(dst, int(n))[:at+int(n)]
	if rows >= 0 {
		l.joinSparse(dst[at:], e.raw, rows)
	} else {
		l.join(dst[at:], e.raw)
	}
	return dst, nil
}

// unhuffSparse decodes into e.raw the streams of an n-byte message of
// layout l whose all-zero rows were left out (compact), from src's
// huff0 blocks: the prefix and the bitmap first, which say how long the
// other streams are. It returns the message's rows and the rest of src.
func (e *Entropy) unhuffSparse(src []byte, n int, l rowLayout) (int, []byte, error) {
	if l.rowBytes == 0 {
		return 0, src, errEntropy
	}
	k := (n - l.prefix) / l.rowBytes
	var err error
	if e.raw, src, err = e.unhuff(e.raw, src, append(e.segs[:0], l.prefix, (k+7)/8)); err != nil {
		return 0, src, err
	}
	zeros := zeroRowsIn(e.raw[l.prefix:], k)
	if zeros <= 0 { // none left out is split's form, not this one
		return 0, src, errEntropy
	}
	segs := l.sparseSegments(e.segs[:0], k, zeros)
	e.raw, src, err = e.unhuff(e.raw, src, segs[2:])
	return k, src, err
}

// unhuff appends the bytes of src's huff0 blocks, streams of sizes segs,
// to dst, and returns the rest of src.
func (e *Entropy) unhuff(dst, src []byte, segs []int) ([]byte, []byte, error) {
	for _, n := range segs {
		for left := n; left > 0; left -= huffBlock {
			var err error
			if dst, src, err = e.unhuffBlock(dst, src, min(left, huffBlock)); err != nil {
				return dst, src, err
			}
		}
	}
	return dst, src, nil
}

// unhuffBlock appends the size bytes of src's first huff0 block to dst and
// returns the rest of src.
func (e *Entropy) unhuffBlock(dst, src []byte, size int) ([]byte, []byte, error) {
	if len(src) == 0 {
		return dst, src, errEntropy
	}
	kind := src[0]
	src = src[1:]
	switch kind {
	case blockRaw:
		if len(src) < size {
			return dst, src, errEntropy
		}
		return append(dst, src[:size]...), src[size:], nil
	case blockRLE:
		if len(src) < 1 {
			return dst, src, errEntropy
		}
		at := len(dst)
		dst = slices.Grow(dst, size)[:at+size]
		for i := range dst[at:] {
			dst[at+i] = src[0]
		}
		return dst, src[1:], nil
	case blockHuff:
		c, k := binary.Uvarint(src)
		if k <= 0 || c > uint64(len(src)-k) {
			return dst, src, errEntropy
		}
		block := src[k : k+int(c)]
		src = src[k+int(c):]
		s, rest, err := huff0.ReadTable(block, &e.hs)
		if err != nil {
			return dst, src, errEntropy
		}
		at := len(dst)
		dst = slices.Grow(dst, size)
		out, err := s.Decoder().Decompress4X(dst[at:at:at+size], rest)
		if err != nil || len(out) != size {
			return dst, src, errEntropy
		}
		return dst[:at+size], src, nil
	}
	return dst, src, errEntropy
}

// unzstd appends the n bytes of src's zstd frame to dst.
func (e *Entropy) unzstd(dst, src []byte, n int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil || !h.HasFCS || h.FrameContentSize != uint64(n) {
		return dst, errEntropy
	}
	if e.zdec == nil {
		var err error
		e.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic("compress: zstd decoder: " + err.Error())
		}
	}
	start := len(dst)
	out, err := e.zdec.DecodeAll(src, slices.Grow(dst, n)[:start:start+n]) // no more than n bytes
	if err != nil || len(out)-start != n {
		return dst, errEntropy
	}
	return out, nil
}
