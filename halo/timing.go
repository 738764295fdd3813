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
