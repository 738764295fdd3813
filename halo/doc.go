// Package halo is the boundary exchange of partition-parallel training.
// Every worker owns the rows of one part of the graph and reads, in each
// layer, rows its peers own (its halo); an Exchange sends each peer the
// owned rows it reads, compressed at the ratio a schedule gives the step,
// receives the halo rows, and backward returns the halo rows' gradients to
// their owners through the same compressor, so the exchange is one
// differentiable operation the layers see only through nn.Halo.
//
// How a pass moves its rows is chosen when the exchange is built, from
// what the compressor declares (compress.Caps):
//
//   - uncompressed passes (evaluation unless Config.EvalCodec, the last
//     layer, codec none) send rows as they are: each peer's rows are
//     gathered into its message, and a peer's message lands straight in
//     the halo rows. Parts in one process (comm.Direct) build no
//     messages: a GCN or GraphSAGE layer writes its owned rows into one
//     buffer the parts share and aggregates over it (Shared, shared.go),
//     other layers' halo rows are copied straight from the peers' rows,
//     and in the backward pass each peer makes the gradient rows it reads
//     with the layer's fill, a piece at a time (PullsGradients), or reads
//     them where the layer wrote them;
//   - per peer: each peer's rows are encoded into its own message, a
//     cache-sized piece at a time when the codec encodes row by row;
//   - shared rows: a codec whose rows encode to a fixed size (top-k)
//     encodes every boundary row once, however many peers read it, and
//     comm.Rows sends each peer its rows from that one encoding.
//   - streaming: a codec that keeps state per stream of messages (delta
//     coding, compress.Caps.Streaming) encodes and decodes each message
//     whole, in both directions; its state goes into checkpoints through
//     CodecStates and RestoreCodec. A codec whose messages vary in size
//     with what they hold (an entropy stage, compress.Caps.Whole) is
//     encoded and decoded whole too. Where such a codec goes in pieces
//     (compress.Caps.Pieces, delta coding and an entropy stage around
//     it), a message's rows are gathered, or its gradient rows made, a
//     cache-sized piece at a time as the codec asks for them, and the
//     gradient rows it decodes are added to the owned rows a piece at a
//     time as it hands them over, so neither goes to memory whole.
//
// At bf16 precision (Config.BF16) the layers round what they exchange to
// bfloat16 for every node, and the passes that send rows as they are send
// them in bf16, half the bytes: rows held in bf16 (nn.Halo's ForwardBF16)
// go as they are and land in place, float32 rows holding bf16 values go
// through the bf16 codec. A codec compresses the passes it compresses as
// before, from the rows widened to float32, and the rows it decodes are
// rounded to bf16, whether they are held in bf16 or in float32. Backward messages are partial
// sums of the gradient's reduction and stay float32.
//
// A codec that sends gradients at the columns its forward message kept
// (compress.GradCoder) is wrapped in a keeper, a decorator that keeps
// those columns as messages pass and answers the backward messages at
// them, so the paths above never see columns. The time spent inside the
// codec is measured by one timing wrapper around it.
package halo
