package halo

import (
	"time"

	"github.com/graft-gnn/graft/compress"
)

// timed is a compressor that adds the time spent in its Encode and Decode
// to seconds: the exchange's one measure of codec time. Gathering rows
// and adding returned gradients, which an uncompressed exchange does too,
// happen outside it.
type timed struct {
	compress.Compressor
	seconds float64
}

func (t *timed) Encode(dst []byte, x []float32, rows, width int, ratio float64, key compress.Key) []byte {
	start := time.Now()
	dst = t.Compressor.Encode(dst, x, rows, width, ratio, key)
	t.seconds += time.Since(start).Seconds()
	return dst
}

func (t *timed) Decode(out []float32, rows, width int, ratio float64, key compress.Key, src []byte) error {
	start := time.Now()
	err := t.Compressor.Decode(out, rows, width, ratio, key, src)
	t.seconds += time.Since(start).Seconds()
	return err
}

// encodePieces is the codec's EncodePieces (p is its Caps' Pieces),
// timed without the time fill takes: the rows' gathering or making, which
// happen outside the codec as in Encode's case.
func (t *timed) encodePieces(p compress.Pieced, dst []byte, rows, width int, ratio float64, key compress.Key, fill func(lo, hi int, buf []float32)) []byte {
	start := time.Now()
	var filling time.Duration
	dst = p.EncodePieces(dst, rows, width, ratio, key, func(lo, hi int, buf []float32) {
		at := time.Now()
		fill(lo, hi, buf)
		filling += time.Since(at)
	})
	t.seconds += (time.Since(start) - filling).Seconds()
	return dst
}

// decodePieces is the codec's DecodePieces (p is its Caps' Pieces), timed
// without the time put takes: the decoded rows' adding where they go,
// which happens outside the codec as after Decode.
func (t *timed) decodePieces(p compress.Pieced, rows, width int, ratio float64, key compress.Key, src []byte, put func(lo, hi int, rows []float32)) error {
	start := time.Now()
	var putting time.Duration
	err := p.DecodePieces(rows, width, ratio, key, src, func(lo, hi int, got []float32) {
		at := time.Now()
		put(lo, hi, got)
		putting += time.Since(at)
	})
	t.seconds += (time.Since(start) - putting).Seconds()
	return err
}
