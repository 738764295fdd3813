//go:build !noasm

#include "textflag.h"

// widenTransposeAVX2 is transposeAVX2 on a bfloat16 src, widening as it
// loads: each row's 8 columns are 16 bytes, zero-extended to 32 bits and
// shifted left by 16 (exactly the float32 of each value), and the rest is
// transposeAVX2's, strips, groups, stores and prefetches alike. The
// caller handles kb < 8.
//
// Registers as in transposeAVX2, but R9 is the row stride of src in bytes
// at 2 a column, and SI steps 16 bytes, 8 columns, a strip.

#define LOADROW(YR, n, zl) \
	CMPQ R10, $n; \
	JEQ  zl; \
	ADDQ R9, DX; \
	PREFETCHT0 (DX)(R13*1); \
	VPMOVZXWD (DX), YR; \
	VPSLLD $16, YR, YR

// Stores of the group's lanes of one column, for each count of lanes.
#define ST8(YR, XR) \
	VMOVUPS YR, (DX); \
	ADDQ    R11, DX

#define ST7(YR, XR) \
	VMOVUPS      XR, (DX); \
	VEXTRACTF128 $1, YR, XR; \
	VMOVSD       XR, 16(DX); \
	VEXTRACTPS   $2, XR, 24(DX); \
	ADDQ         R11, DX

#define ST6(YR, XR) \
	VMOVUPS      XR, (DX); \
	VEXTRACTF128 $1, YR, XR; \
	VMOVSD       XR, 16(DX); \
	ADDQ         R11, DX

#define ST5(YR, XR) \
	VMOVUPS      XR, (DX); \
	VEXTRACTF128 $1, YR, XR; \
	VMOVSS       XR, 16(DX); \
	ADDQ         R11, DX

#define ST4(YR, XR) \
	VMOVUPS XR, (DX); \
	ADDQ    R11, DX

#define ST3(YR, XR) \
	VMOVSD     XR, (DX); \
	VEXTRACTPS $2, XR, 8(DX); \
	ADDQ       R11, DX

#define ST2(YR, XR) \
	VMOVSD XR, (DX); \
	ADDQ   R11, DX

#define ST1(YR, XR) \
	VMOVSS XR, (DX); \
	ADDQ   R11, DX

#define STORE8COLS(ST) \
	ST(Y8, X8); \
	ST(Y9, X9); \
	ST(Y10, X10); \
	ST(Y11, X11); \
	ST(Y12, X12); \
	ST(Y13, X13); \
	ST(Y14, X14); \
	ST(Y15, X15); \
	JMP stored

// func widenTransposeAVX2(dst *float32, ldd, lanes int, src *uint16, lds, h, kb int)
TEXT ·widenTransposeAVX2(SB), NOSPLIT, $0-56
	MOVQ  dst+0(FP), DI
	MOVQ  ldd+8(FP), R11
	SHLQ  $2, R11
	MOVQ  R11, R12
	SHLQ  $3, R12
	MOVQ  lanes+16(FP), R8
	MOVQ  src+24(FP), SI
	MOVQ  lds+32(FP), R9
	SHLQ  $1, R9
	MOVQ  h+40(FP), R10
	MOVQ  R10, R13
	IMULQ R9, R13
	MOVQ  kb+48(FP), CX

strip:
	// Group 0: rows 0-7, lanes 0 to min(lanes, 8).
	XORQ BX, BX
	MOVQ R8, AX
	CMPQ AX, $8
	JLE  lanes0
	MOVQ $8, AX

lanes0:
	MOVQ       SI, DX
	PREFETCHT0 (DX)(R13*1)
	VPMOVZXWD  (DX), Y0
	VPSLLD     $16, Y0, Y0
	LOADROW(Y1, 1, z1)
	LOADROW(Y2, 2, z2)
	LOADROW(Y3, 3, z3)
	LOADROW(Y4, 4, z4)
	LOADROW(Y5, 5, z5)
	LOADROW(Y6, 6, z6)
	LOADROW(Y7, 7, z7)
	MOVQ DI, DX
	JMP  transpose

group1:
	// Group 1: rows 8-15, lanes 8 to lanes.
	MOVQ $1, BX
	MOVQ R8, AX
	SUBQ $8, AX
	LEAQ 32(DI), DX
	CMPQ R10, $8
	JGT  rows1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	JMP    store

rows1:
	LEAQ       (SI)(R9*8), DX
	PREFETCHT0 (DX)(R13*1)
	VPMOVZXWD  (DX), Y0
	VPSLLD     $16, Y0, Y0
	LOADROW(Y1, 9, z1)
	LOADROW(Y2, 10, z2)
	LOADROW(Y3, 11, z3)
	LOADROW(Y4, 12, z4)
	LOADROW(Y5, 13, z5)
	LOADROW(Y6, 14, z6)
	LOADROW(Y7, 15, z7)
	LEAQ 32(DI), DX
	JMP  transpose

	// Rows past h are zero; z(n) zeroes rows n to 7 of the group.
z1:
	VXORPS Y1, Y1, Y1

z2:
	VXORPS Y2, Y2, Y2

z3:
	VXORPS Y3, Y3, Y3

z4:
	VXORPS Y4, Y4, Y4

z5:
	VXORPS Y5, Y5, Y5

z6:
	VXORPS Y6, Y6, Y6

z7:
	VXORPS Y7, Y7, Y7
	MOVQ   DI, DX
	TESTQ  BX, BX
	JEQ    transpose
	ADDQ   $32, DX

transpose:
	// Interleave row pairs: Y8 = r0 r1 columns 0, 1 | 4, 5; Y9 = 2, 3 | 6, 7.
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// Y(c) = rows 0-3 of columns c | c+4, Y(4+c) the same of rows 4-7.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7

	// Y(8+c) = column c.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

store:
	CMPQ AX, $6
	JEQ  st6
	CMPQ AX, $8
	JEQ  st8
	CMPQ AX, $4
	JEQ  st4
	CMPQ AX, $7
	JEQ  st7
	CMPQ AX, $5
	JEQ  st5
	CMPQ AX, $3
	JEQ  st3
	CMPQ AX, $2
	JEQ  st2
	STORE8COLS(ST1)

st8:
	STORE8COLS(ST8)

st7:
	STORE8COLS(ST7)

st6:
	STORE8COLS(ST6)

st5:
	STORE8COLS(ST5)

st4:
	STORE8COLS(ST4)

st3:
	STORE8COLS(ST3)

st2:
	STORE8COLS(ST2)

stored:
	TESTQ BX, BX
	JNE   next
	CMPQ  R8, $8
	JGT   group1

next:
	ADDQ $16, SI
	ADDQ R12, DI
	SUBQ $8, CX
	JEQ  done
	CMPQ CX, $8
	JGE  strip

	// Fewer than 8 columns left: step back so that the last strip ends
	// at column kb, storing again the columns it shares with the one
	// before.
	MOVQ  $8, AX
	SUBQ  CX, AX
	MOVQ  AX, DX
	SHLQ  $1, DX
	SUBQ  DX, SI
	IMULQ R11, AX
	SUBQ  AX, DI
	MOVQ  $8, CX
	JMP   strip

done:
	VZEROUPPER
	RET
