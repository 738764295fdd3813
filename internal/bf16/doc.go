// Package bf16 converts between float32 and bfloat16, the top half of a
// float32's bits, which mixed-precision training stores features,
// activations and messages in. Values are uint16 bit patterns. Rounding is
// to nearest, ties to even, as hardware converters do; NaNs stay quiet NaNs
// and infinities stay infinite; widening is exact. The bulk conversions and
// the row gather run in AVX-512 or AVX2 assembly beside pure-Go twins (the
// noasm build and other architectures).
package bf16
