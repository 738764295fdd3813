// Package gradcomp compresses the gradients that the workers of a
// data- or partition-parallel run sum before every optimiser step. A
// Method replaces the exact all-reduce: each worker compresses its own
// gradient, the workers exchange what they compressed, and every worker
// adds the messages in rank order, so all of them end with the same bits
// and keep identical parameters.
//
// The lossy methods keep error feedback by default: what a worker's
// message left out of its gradient (its residual) is added to its next
// gradient, so that nothing is lost, only delayed. Methods register
// themselves by name (Register), one file each; New parses a spec such as
// "topk:0.01" or "powersgd:2".
//
// A method learns the layout of the packed gradient buffer from Init: one
// Shape per parameter, in order. Values past the parameters (the loss the
// training loop sends along) are always summed exactly.
package gradcomp
