//go:build !noasm

#include "textflag.h"

// huffEncodeAVX512 is huffTable.encodeGo 64 symbols at a time: each
// symbol's code and length looked up by byte permutes (VPERMI2B) in the
// table's low and high bytes, then the codes of four consecutive symbols
// put together in a 64-bit lane (the later symbol's code below the
// earlier's, at most 44 bits), and the 16 lanes appended to the stream
// from the last symbols' on, as the Go loop appends symbols.

// huffLanes leaves in w the codes of the 4 symbols of each 64-bit lane of
// w's words (code | length<<12), put together, and their length in l;
// it clobbers t and Z11.
#define huffLanes(w, l, t) \
	VPSRLW   $12, w, l  \
	VPANDD   Z20, w, w  \
	VPSRLD   $16, w, t  \
	VPANDD   Z21, w, w  \
	VPSRLD   $16, l, Z11 \
	VPSLLVD  Z11, w, w  \
	VPORD    t, w, w    \
	VPMADDWD Z22, l, l  \
	VPSRLQ   $32, w, t  \
	VPANDQ   Z23, w, w  \
	VPSRLQ   $32, l, Z11 \
	VPSLLVQ  Z11, w, w  \
	VPORQ    t, w, w    \
	VPANDQ   Z23, l, l  \
	VPADDQ   Z11, l, l

// huffAppend appends the lane of v bits at v(SP), l(SP) long, to the
// stream: R8 holds the R9 < 8 bits not yet written, DI where they go.
#define huffAppend(v, l) \
	MOVQ  v(SP), AX   \
	SHLXQ R9, AX, AX  \
	ORQ   AX, R8      \
	MOVQ  R8, (DI)    \
	ADDQ  l(SP), R9   \
	MOVQ  R9, AX      \
	SHRQ  $3, AX      \
	ADDQ  AX, DI      \
	MOVQ  R9, AX      \
	ANDQ  $-8, AX     \
	SHRXQ AX, R8, R8  \
	ANDQ  $7, R9

// huffChunk appends the codes of the 64 symbols in Z0 whose lanes K2
// marks (the others count as none), the last first.
#define huffChunk \
	VPMOVB2M   Z0, K1          \
	VMOVDQA64  Z0, Z1          \
	VPERMI2B   Z25, Z24, Z1    \
	VMOVDQA64  Z0, Z2          \
	VPERMI2B   Z27, Z26, Z2    \
	VMOVDQU8   Z2, K1, Z1      \
	VMOVDQA64  Z0, Z3          \
	VPERMI2B   Z29, Z28, Z3    \
	VMOVDQA64  Z0, Z4          \
	VPERMI2B   Z31, Z30, Z4    \
	VMOVDQU8   Z4, K1, Z3      \
	VMOVDQU8.Z Z1, K2, Z1      \
	VMOVDQU8.Z Z3, K2, Z3      \
	VPUNPCKLBW Z3, Z1, Z5      \
	VPUNPCKHBW Z3, Z1, Z6      \
	huffLanes(Z5, Z7, Z8)      \
	huffLanes(Z6, Z9, Z10)     \
	VMOVDQU64  Z5, 0(SP)       \
	VMOVDQU64  Z6, 64(SP)      \
	VMOVDQU64  Z7, 128(SP)     \
	VMOVDQU64  Z9, 192(SP)     \
	huffAppend(120, 248) \
	huffAppend(112, 240) \
	huffAppend(56, 184) \
	huffAppend(48, 176) \
	huffAppend(104, 232) \
	huffAppend(96, 224) \
	huffAppend(40, 168) \
	huffAppend(32, 160) \
	huffAppend(88, 216) \
	huffAppend(80, 208) \
	huffAppend(24, 152) \
	huffAppend(16, 144) \
	huffAppend(72, 200) \
	huffAppend(64, 192) \
	huffAppend(8, 136) \
	huffAppend(0, 128)

// func huffEncodeAVX512(dst, src *byte, n int, t *huffTable) int
//
// Writes the stream of src's n ≥ 1 symbols' codes (t's) to dst, which
// has room for n·11/8 + 32 bytes, and returns its size. Symbol 16j+i of a
// chunk of 64 is in word i of 128-bit lane j after the unpacks, words 0–7
// in Z5 and 8–15 in Z6: lanes are appended from the chunk's last four
// symbols (Z6's qword 7) down to its first (Z5's qword 0).
TEXT ·huffEncodeAVX512(SB), NOSPLIT, $256-40
	MOVQ         t+24(FP), AX
	VMOVDQU64    0(AX), Z24        // the codes' low bytes
	VMOVDQU64    64(AX), Z25
	VMOVDQU64    128(AX), Z26
	VMOVDQU64    192(AX), Z27
	VMOVDQU64    256(AX), Z28      // their high bits and lengths
	VMOVDQU64    320(AX), Z29
	VMOVDQU64    384(AX), Z30
	VMOVDQU64    448(AX), Z31
	MOVL         $0x0fff0fff, AX
	VPBROADCASTD AX, Z20
	MOVL         $0xffff, AX
	VPBROADCASTD AX, Z21
	MOVL         $0x00010001, AX
	VPBROADCASTD AX, Z22
	MOVL         $0xffffffff, AX
	VPBROADCASTQ AX, Z23
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	XORQ         R8, R8            // bits not yet written
	XORQ         R9, R9            // how many
	MOVQ         CX, DX
	ANDQ         $63, DX           // the last, partial chunk's symbols
	ANDQ         $-64, CX          // the whole chunks'
	TESTQ        DX, DX
	JEQ          he_whole
	MOVQ         $-1, AX
	BZHIQ        DX, AX, AX
	KMOVQ        AX, K2
	VMOVDQU8.Z   (SI)(CX*1), K2, Z0
	huffChunk

he_whole:
	KXNORQ K2, K2, K2

he_loop:
	TESTQ    CX, CX
	JEQ      he_end
	SUBQ     $64, CX
	VMOVDQU8 (SI)(CX*1), Z0
	huffChunk
	JMP      he_loop

he_end:
	MOVQ  $1, AX                   // the end marker
	SHLXQ R9, AX, AX
	ORQ   AX, R8
	MOVQ  R8, (DI)
	ADDQ  $8, R9                   // its bits, rounded up to bytes
	SHRQ  $3, R9
	ADDQ  R9, DI
	SUBQ  dst+0(FP), DI
	MOVQ  DI, ret+32(FP)
	VZEROUPPER
	RET
