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

// func kernel12x32BF16(steps int, a, b *uint32, c *float32, ldc int, load bool)
TEXT ·kernel12x32BF16(SB), NOSPLIT, $0-41
	MOVQ steps+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI

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

// func zip16AVX512(dst *uint32, ldd int, src *uint16, lds int, valid, lanes uint16, steps int)
//
// Step s stores, in up to 16 lanes of dst (stride ldd), the pairs of
// columns of src rows 2s (low half) and 2s+1 (high half): a masked load of
// the valid columns of each row (the rest read as zero), zero-extension to
// 32 bits, and a shift and or. It prefetches the rows 8 steps ahead.
TEXT ·zip16AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $1, R9
	MOVWLZX valid+32(FP), AX
	KMOVW AX, K1
	MOVWLZX lanes+34(FP), AX
	KMOVW AX, K2
	MOVQ steps+40(FP), CX
	LEAQ (R9)(R9*1), R10
	MOVQ R10, R11
	SHLQ $3, R11

zip:
	PREFETCHT0 (SI)(R11*1)
	VMOVDQU16.Z (SI), K1, Y0
	VMOVDQU16.Z (SI)(R9*1), K1, Y1
	VPMOVZXWD Y0, Z0
	VPMOVZXWD Y1, Z1
	VPSLLD $16, Z1, Z1
	VPORD Z1, Z0, Z0
	VMOVDQU32 Z0, K2, (DI)
	ADDQ R10, SI
	ADDQ R8, DI
	DECQ CX
	JNE  zip
	VZEROUPPER
	RET
