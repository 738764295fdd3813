// Package bench measures graft's compute kernels and training loop the way
// `graft bench` reports them: one JSON object per measurement, with the
// machine's memory bandwidth (a STREAM triad) measured in the same run so
// that kernel figures can be read as fractions of what the hardware allows.
package bench
