// Package atomicfile writes files that readers see whole or not at all:
// checkpoints and stored parts go through it, so that a crash, a full disk
// or a killed process never leaves a half-written file under its final name.
// CheckWritable and CheckWritableDir let a long run refuse, before it
// starts, an output it could not write at the end.
package atomicfile
