//go:build !noasm

#include "textflag.h"

// The bf16 micro-kernel multiplies a 12×32 tile with VDPBF16PS, which Go's
// assembler does not know: DPn below is its EVEX encoding for accumulator
// Zn, the broadcast pair of row n/2 in Z(26 + (n/2)%6) and the pairs of
// columns 16(n%2)..16(n%2)+15 in Z(24 + n%2). TestBF16Encodings re-derives
// every byte from the register numbers.
//
// VDPBF16PS zmm1, zmm2, zmm3 is EVEX.512.F3.0F38.W0 52 /r: for each of the
// 16 float32 lanes, zmm1 += zmm2.hi·zmm3.hi, then += zmm2.lo·zmm3.lo, where
// lo and hi are the lane's two bfloat16 halves.
// DP0: VDPBF16PS zmm0, zmm26, zmm24
#define DP0 BYTE $0x62; BYTE $0x92; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc0
// DP1: VDPBF16PS zmm1, zmm26, zmm25
#define DP1 BYTE $0x62; BYTE $0x92; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc9
// DP2: VDPBF16PS zmm2, zmm27, zmm24
#define DP2 BYTE $0x62; BYTE $0x92; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd0
// DP3: VDPBF16PS zmm3, zmm27, zmm25
#define DP3 BYTE $0x62; BYTE $0x92; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd9
// DP4: VDPBF16PS zmm4, zmm28, zmm24
#define DP4 BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0
// DP5: VDPBF16PS zmm5, zmm28, zmm25
#define DP5 BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9
// DP6: VDPBF16PS zmm6, zmm29, zmm24
#define DP6 BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf0
// DP7: VDPBF16PS zmm7, zmm29, zmm25
#define DP7 BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf9
// DP8: VDPBF16PS zmm8, zmm30, zmm24
#define DP8 BYTE $0x62; BYTE $0x12; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xc0
// DP9: VDPBF16PS zmm9, zmm30, zmm25
#define DP9 BYTE $0x62; BYTE $0x12; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xc9
// DP10: VDPBF16PS zmm10, zmm31, zmm24
#define DP10 BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd0
// DP11: VDPBF16PS zmm11, zmm31, zmm25
#define DP11 BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd9
// DP12: VDPBF16PS zmm12, zmm26, zmm24
#define DP12 BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xe0
// DP13: VDPBF16PS zmm13, zmm26, zmm25
#define DP13 BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xe9
// DP14: VDPBF16PS zmm14, zmm27, zmm24
#define DP14 BYTE $0x62; BYTE $0x12; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xf0
// DP15: VDPBF16PS zmm15, zmm27, zmm25
#define DP15 BYTE $0x62; BYTE $0x12; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xf9
// DP16: VDPBF16PS zmm16, zmm28, zmm24
#define DP16 BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0
// DP17: VDPBF16PS zmm17, zmm28, zmm25
#define DP17 BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9
// DP18: VDPBF16PS zmm18, zmm29, zmm24
#define DP18 BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xd0
// DP19: VDPBF16PS zmm19, zmm29, zmm25
#define DP19 BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xd9
// DP20: VDPBF16PS zmm20, zmm30, zmm24
#define DP20 BYTE $0x62; BYTE $0x82; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xe0
// DP21: VDPBF16PS zmm21, zmm30, zmm25
#define DP21 BYTE $0x62; BYTE $0x82; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xe9
// DP22: VDPBF16PS zmm22, zmm31, zmm24
#define DP22 BYTE $0x62; BYTE $0x82; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf0
// DP23: VDPBF16PS zmm23, zmm31, zmm25
#define DP23 BYTE $0x62; BYTE $0x82; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf9

// One step of the 12×32 tile: a pair of k for 32 columns (two vectors of
// b) and 12 rows (a broadcast pair of a per row).
#define STEPBF(AO, BO) \
	VMOVUPS BO(BX), Z24; \
	VMOVUPS BO+64(BX), Z25; \
	VPBROADCASTD AO(AX), Z26; \
	DP0; DP1; \
	VPBROADCASTD AO+4(AX), Z27; \
	DP2; DP3; \
	VPBROADCASTD AO+8(AX), Z28; \
	DP4; DP5; \
	VPBROADCASTD AO+12(AX), Z29; \
	DP6; DP7; \
	VPBROADCASTD AO+16(AX), Z30; \
	DP8; DP9; \
	VPBROADCASTD AO+20(AX), Z31; \
	DP10; DP11; \
	VPBROADCASTD AO+24(AX), Z26; \
	DP12; DP13; \
	VPBROADCASTD AO+28(AX), Z27; \
	DP14; DP15; \
	VPBROADCASTD AO+32(AX), Z28; \
	DP16; DP17; \
	VPBROADCASTD AO+36(AX), Z29; \
	DP18; DP19; \
	VPBROADCASTD AO+40(AX), Z30; \
	DP20; DP21; \
	VPBROADCASTD AO+44(AX), Z31; \
	DP22; DP23

#define ADDROWBF(Z0_, Z1_) \
	VADDPS (DI), Z0_, Z0_; \
	VADDPS 64(DI), Z1_, Z1_; \
	VMOVUPS Z0_, (DI); \
	VMOVUPS Z1_, 64(DI); \
	ADDQ SI, DI

#define SETROWBF(Z0_, Z1_) \
	VMOVUPS Z0_, (DI); \
	VMOVUPS Z1_, 64(DI); \
	ADDQ SI, DI

#define PREFETCHROWBF \
	PREFETCHT0 (DI); \
	PREFETCHT0 64(DI); \
	ADDQ SI, DI

// func kernel12x32BF16(steps int, a, b *uint32, c *float32, ldc int, load bool, pf uintptr)
TEXT ·kernel12x32BF16(SB), NOSPLIT, $0-56
	MOVQ steps+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
	MOVQ pf+48(FP), R8
	TESTQ R8, R8
	CMOVQEQ AX, R8 // nothing to prefetch: harmlessly touch a instead

	// Start fetching the C tile now so the write-back does not wait on it.
	MOVQ DI, DX
	PREFETCHROWBF; PREFETCHROWBF; PREFETCHROWBF; PREFETCHROWBF
	PREFETCHROWBF; PREFETCHROWBF; PREFETCHROWBF; PREFETCHROWBF
	PREFETCHROWBF; PREFETCHROWBF; PREFETCHROWBF; PREFETCHROWBF
	MOVQ DX, DI

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

	CMPQ CX, $4
	JLT  tailbf

loopbf:
	PREFETCHT0 (R8) // the next block, two lines per four steps
	PREFETCHT0 64(R8)
	ADDQ $128, R8
	PREFETCHT0 768(AX) // a, 16 steps ahead
	STEPBF(0, 0)
	STEPBF(48, 128)
	PREFETCHT0 832(AX)
	STEPBF(96, 256)
	STEPBF(144, 384)
	ADDQ $192, AX
	ADDQ $512, BX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loopbf

tailbf:
	TESTQ CX, CX
	JEQ   storebf

tailloopbf:
	STEPBF(0, 0)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNE  tailloopbf

storebf:
	CMPB load+40(FP), $0
	JEQ  setbf
	ADDROWBF(Z0, Z1)
	ADDROWBF(Z2, Z3)
	ADDROWBF(Z4, Z5)
	ADDROWBF(Z6, Z7)
	ADDROWBF(Z8, Z9)
	ADDROWBF(Z10, Z11)
	ADDROWBF(Z12, Z13)
	ADDROWBF(Z14, Z15)
	ADDROWBF(Z16, Z17)
	ADDROWBF(Z18, Z19)
	ADDROWBF(Z20, Z21)
	ADDROWBF(Z22, Z23)
	VZEROUPPER
	RET

setbf:
	SETROWBF(Z0, Z1)
	SETROWBF(Z2, Z3)
	SETROWBF(Z4, Z5)
	SETROWBF(Z6, Z7)
	SETROWBF(Z8, Z9)
	SETROWBF(Z10, Z11)
	SETROWBF(Z12, Z13)
	SETROWBF(Z14, Z15)
	SETROWBF(Z16, Z17)
	SETROWBF(Z18, Z19)
	SETROWBF(Z20, Z21)
	SETROWBF(Z22, Z23)
	VZEROUPPER
	RET

// zipLo and zipHi pick, for VPERMI2W, the interleaved words of columns
// 0-15 and 16-31 of two 32-word rows (the second row's words are 32-63).
DATA zipLo<>+0(SB)/8, $0x0021000100200000
DATA zipLo<>+8(SB)/8, $0x0023000300220002
DATA zipLo<>+16(SB)/8, $0x0025000500240004
DATA zipLo<>+24(SB)/8, $0x0027000700260006
DATA zipLo<>+32(SB)/8, $0x0029000900280008
DATA zipLo<>+40(SB)/8, $0x002b000b002a000a
DATA zipLo<>+48(SB)/8, $0x002d000d002c000c
DATA zipLo<>+56(SB)/8, $0x002f000f002e000e
GLOBL zipLo<>(SB), RODATA|NOPTR, $64
DATA zipHi<>+0(SB)/8, $0x0031001100300010
DATA zipHi<>+8(SB)/8, $0x0033001300320012
DATA zipHi<>+16(SB)/8, $0x0035001500340014
DATA zipHi<>+24(SB)/8, $0x0037001700360016
DATA zipHi<>+32(SB)/8, $0x0039001900380018
DATA zipHi<>+40(SB)/8, $0x003b001b003a001a
DATA zipHi<>+48(SB)/8, $0x003d001d003c001c
DATA zipHi<>+56(SB)/8, $0x003f001f003e001e
GLOBL zipHi<>(SB), RODATA|NOPTR, $64

// func zipRowsAVX512(dst *uint32, ldd int, src *uint16, lds int, w, width, steps int)
//
// zipGo, 32 columns at a time: masked loads of the valid words of the two
// rows (the rest read as zero), two word permutes into 32 pairs, and two
// stores masked to width lanes.
//
// Registers: DI, SI the step's dst and src, R8 ldd and R9 lds in bytes,
// R10 w, R11 width, DX steps left, BX the column, R12 and R13 the rows'
// column, R14 the dst column; K1 masks the words loaded, K2 and K3 the
// lanes stored.
TEXT ·zipRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $1, R9
	MOVQ w+32(FP), R10
	MOVQ width+40(FP), R11
	MOVQ steps+48(FP), DX
	VMOVDQU64 zipLo<>(SB), Z30
	VMOVDQU64 zipHi<>(SB), Z31

zrstep:
	XORQ BX, BX
	MOVQ SI, R12
	LEAQ (SI)(R9*1), R13
	MOVQ DI, R14

zrcol:
	// K1: min(32, max(0, w-BX)) words.
	MOVQ R10, AX
	SUBQ BX, AX
	MOVQ $-1, CX
	CMPQ AX, $32
	JGE  zrload
	XORQ CX, CX
	TESTQ AX, AX
	JLE  zrload
	MOVQ AX, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	MOVQ AX, CX

zrload:
	KMOVD CX, K1
	VMOVDQU16.Z (R12), K1, Z0
	VMOVDQU16.Z (R13), K1, Z1
	VMOVDQA64 Z30, Z2
	VPERMI2W Z1, Z0, Z2
	VMOVDQA64 Z31, Z3
	VPERMI2W Z1, Z0, Z3

	// K2, K3: min(16, max(0, width-BX)) and min(16, max(0, width-BX-16)) lanes.
	MOVQ R11, AX
	SUBQ BX, AX
	MOVQ $-1, CX
	CMPQ AX, $32
	JGE  zrstore
	MOVQ AX, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	MOVQ AX, CX

zrstore:
	KMOVD CX, K2
	KSHIFTRD $16, K2, K3
	VMOVDQU32 Z2, K2, (R14)
	VMOVDQU32 Z3, K3, 64(R14)
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $128, R14
	ADDQ $32, BX
	CMPQ BX, R11
	JLT  zrcol

	LEAQ (SI)(R9*2), SI
	ADDQ R8, DI
	DECQ DX
	JNE  zrstep
	VZEROUPPER
	RET
