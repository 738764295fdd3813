// Package compress shrinks the boundary messages of partition-parallel
// training. A Compressor turns the rows a peer needs into bytes and back; a
// Schedule says which compression ratio is in force at each training step.
//
// Sender and receiver derive every random choice (which columns a random
// subspace keeps, how stochastic rounding rounds) from a Key naming the
// message, so no side information travels. The column-selecting compressors
// (truncate, subspace) are symmetric linear maps: compressing the backward
// gradient with the forward message's Key is then exactly the adjoint, so the
// gradients the trainer computes are the true gradients of the compressed
// forward pass. top-k, which picks columns by value, is a GradCoder: a
// gradient travels at the columns its forward message kept, which both
// ends know from that message, so its exchange is the exact adjoint too.
// Quantisation and bf16 compress gradients independently, as a
// straight-through estimate.
//
// Delta is stateful: both ends of a stream of messages (a layer, a
// direction, a pair of workers) keep the receiver's reconstruction of its
// rows, and each message sends the rows' quantised change from it, with
// the error fed back into the next message (Caps.Streaming); at bf16
// precision (Streaming's SetBF16) it keeps the reconstructions in
// bfloat16, rounding them after each message. quantr, like
// Delta with bits r, takes its bit width from the ratio schedule.
//
// Entropy wraps any codec but top-k in a lossless entropy stage: the
// receiver decodes the wrapped codec's message bit for bit, from fewer
// bytes where its codes are far from uniform (delta coding's are).
//
// A compressor declares once what its messages allow beyond Encode and
// Decode (Caps: rows that encode alone, rows of a fixed size, gradients at
// the forward columns), and the halo exchange picks its strategy from
// that when it is built. Compressors register themselves by name
// (Register), one file each; the command line and New find them there, and
// a program can register its own or hand a trainer a constructor directly.
package compress
