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
// blocks of 128 KiB, each with its own table) does, and zstd's fastest
// level, which also finds runs and repeats, is tried where the bytes are
// that redundant (Huffman below half their size). A message takes the
// smallest of the two and of its raw bytes.
//
// The coded message is empty for an empty message, else one byte saying
// how it is coded, then: the raw message (entropyRaw: so a message never
// grows by more than a byte), or its length and either its huff0 blocks
// or one zstd frame. Each huff0 block is a byte saying how it is coded
// and then its bytes as they are (blockRaw), its one repeated byte
// (blockRLE), or the length and bytes of its huff0 4-stream coding
// (blockHuff).
//
// Messages of an Entropy codec are encoded and decoded whole and their
// size depends on what they hold (Caps.Whole). Codecs whose gradients
// follow their forward messages' columns (top-k) cannot be wrapped.
type Entropy struct {
	Inner Compressor

	msg  []byte // scratch: the wrapped codec's message
	huff []byte // scratch: a huff0 coding
	hs   huff0.Scratch
	zenc *zstd.Encoder
	zdec *zstd.Decoder
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
// one.
func (e *Entropy) Caps() Caps { return Caps{Whole: true, Streaming: e.Inner.Caps().Streaming} }

// Encode appends the entropy coding of the wrapped codec's message of x.
func (e *Entropy) Encode(dst []byte, x []float32, rows, width int, ratio float64, key Key) []byte {
	e.msg = e.Inner.Encode(e.msg[:0], x, rows, width, ratio, key)
	return e.pack(dst, e.msg)
}

// Decode decodes src's entropy coding and the wrapped codec's message in
// it.
func (e *Entropy) Decode(out []float32, rows, width int, ratio float64, key Key, src []byte) error {
	var err error
	e.msg, err = e.unpack(e.msg[:0], src, maxMessage(rows, width))
	if err != nil {
		return err
	}
	return e.Inner.Decode(out, rows, width, ratio, key, e.msg)
}

// maxMessage bounds the size of a wrapped codec's message of rows×width,
// so that a corrupt length cannot make a decoder allocate without limit:
// every codec sends at most the rows as float32s and a few bytes a row
// (delta's exact rows and bitmap; a quantiser's header is 8 bytes a row).
func maxMessage(rows, width int) int { return 4*rows*(width+4) + 64 }

// How a message, and a huff0 block, is coded.
const (
	entropyRaw  = 0
	entropyHuff = 1
	entropyZstd = 2

	blockRaw  = 0
	blockRLE  = 1
	blockHuff = 2

	huffBlock = 1 << 17 // ≤ huff0.BlockSizeMax
)

// pack appends the entropy coding of msg to dst.
func (e *Entropy) pack(dst, msg []byte) []byte {
	if len(msg) == 0 {
		return dst
	}
	e.huff = e.huffman(e.huff[:0], msg)
	best := e.huff
	if len(e.huff) < len(msg)/2 {
		if z := e.zstd(msg); len(z) < len(best) {
			best = z
		}
	}
	if len(best) >= len(msg)+1 {
		return append(append(dst, entropyRaw), msg...)
	}
	return append(dst, best...)
}

// huffman appends msg's huff0 coding (marker, length, blocks) to dst.
func (e *Entropy) huffman(dst, msg []byte) []byte {
	dst = binary.AppendUvarint(append(dst, entropyHuff), uint64(len(msg)))
	e.hs.Reuse = huff0.ReusePolicyNone // every block carries its table
	for b := range slices.Chunk(msg, huffBlock) {
		out, _, err := huff0.Compress4X(b, &e.hs)
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
	return dst
}

// zstd returns msg's zstd coding (marker, length, frame) in scratch space.
func (e *Entropy) zstd(msg []byte) []byte {
	if e.zenc == nil {
		var err error
		e.zenc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true), zstd.WithZeroFrames(true))
		if err != nil {
			panic("compress: zstd encoder: " + err.Error())
		}
	}
	z := binary.AppendUvarint(append(e.huff[len(e.huff):], entropyZstd), uint64(len(msg)))
	return e.zenc.EncodeAll(msg, z)
}

var errEntropy = errors.New("compress: malformed entropy-coded message")

// unpack appends the message src codes to dst; a message longer than max
// is an error.
func (e *Entropy) unpack(dst, src []byte, max int) ([]byte, error) {
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
	switch mode {
	case entropyHuff:
		return e.unhuff(dst, src, int(n))
	case entropyZstd:
		return e.unzstd(dst, src, int(n))
	}
	return dst, errEntropy
}

// unhuff appends the n bytes of src's huff0 blocks to dst.
func (e *Entropy) unhuff(dst, src []byte, n int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, n)
	for left := n; left > 0; left -= huffBlock {
		size := min(left, huffBlock)
		if len(src) == 0 {
			return dst, errEntropy
		}
		kind := src[0]
		src = src[1:]
		switch kind {
		case blockRaw:
			if len(src) < size {
				return dst, errEntropy
			}
			dst, src = append(dst, src[:size]...), src[size:]
		case blockRLE:
			if len(src) < 1 {
				return dst, errEntropy
			}
			for range size {
				dst = append(dst, src[0])
			}
			src = src[1:]
		case blockHuff:
			c, k := binary.Uvarint(src)
			if k <= 0 || c > uint64(len(src)-k) {
				return dst, errEntropy
			}
			block := src[k : k+int(c)]
			src = src[k+int(c):]
			s, rest, err := huff0.ReadTable(block, &e.hs)
			if err != nil {
				return dst, errEntropy
			}
			at := len(dst)
			out, err := s.Decoder().Decompress4X(dst[at:at:at+size], rest)
			if err != nil || len(out) != size {
				return dst, errEntropy
			}
			dst = dst[:at+size]
		default:
			return dst, errEntropy
		}
	}
	if len(src) != 0 || len(dst)-start != n {
		return dst, errEntropy
	}
	return dst, nil
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
