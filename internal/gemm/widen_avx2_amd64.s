//go:build !noasm

#include "textflag.h"

// widenTransposeAVX2 is transposeAVX2 on a bfloat16 src, widening as it
// goes, with the strips, groups, ragged last strip, stores and prefetches
// of transposeAVX2 (the caller handles kb < 8). A strip's 8 columns of a
// row are 16 bytes: row r of a group (r < 4) is loaded into the low lane
// of a register and row r+4 into its high lane; unpacking its words with
// zeros (VPUNPCKLWD, VPUNPCKHWD) puts each value in the high half of a
// 32-bit lane, exactly its float32, columns 0-3 in one register and 4-7
// in another. Rows r and r+4 sharing a register, the 4×4 transposes
// within lanes that follow leave each column's 8 rows in one register in
// order, so no cross-lane stage is needed: fewer shuffles than widening
// every row to 8 lanes first and transposing 8×8.
//
// Registers as in transposeAVX2, but R9 is the row stride of src in bytes
// at 2 a column, SI steps 16 bytes (8 columns) a strip, the columns end in
// Y0-Y7, and Y15 is zero while the rows are widened.

// LOADLO loads row n of the group into the low lane, zeroing the high one,
// unless n is h: then rows n to 7 are all zero.
#define LOADLO(XR, n, zl) \
	CMPQ R10, $n; \
	JEQ  zl; \
	ADDQ R9, DX; \
	PREFETCHT0 (DX)(R13*1); \
	VMOVDQU (DX), XR

// LOADHI inserts row n (n-4 of the low lane) into the high lane, unless n
// is h: then it and the rows after it stay zero.
#define LOADHI(YR, n) \
	CMPQ R10, $n; \
	JEQ  widen; \
	ADDQ R9, DX; \
	PREFETCHT0 (DX)(R13*1); \
	VINSERTI128 $1, (DX), YR, YR

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
	ST(Y0, X0); \
	ST(Y1, X1); \
	ST(Y2, X2); \
	ST(Y3, X3); \
	ST(Y4, X4); \
	ST(Y5, X5); \
	ST(Y6, X6); \
	ST(Y7, X7); \
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
	VMOVDQU    (DX), X0
	LOADLO(X1, 1, z1)
	LOADLO(X2, 2, z2)
	LOADLO(X3, 3, z3)
	LOADHI(Y0, 4)
	LOADHI(Y1, 5)
	LOADHI(Y2, 6)
	LOADHI(Y3, 7)
	JMP widen

group1:
	// Group 1: rows 8-15, lanes 8 to lanes.
	MOVQ $1, BX
	MOVQ R8, AX
	SUBQ $8, AX
	CMPQ R10, $8
	JGT  rows1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ   32(DI), DX
	JMP    store

rows1:
	LEAQ       (SI)(R9*8), DX
	PREFETCHT0 (DX)(R13*1)
	VMOVDQU    (DX), X0
	LOADLO(X1, 9, z1)
	LOADLO(X2, 10, z2)
	LOADLO(X3, 11, z3)
	LOADHI(Y0, 12)
	LOADHI(Y1, 13)
	LOADHI(Y2, 14)
	LOADHI(Y3, 15)
	JMP widen

	// Rows past h are zero; z(n) zeroes rows n to 3 of the low lanes, and
	// with them the high lanes, rows 4 to 7.
z1:
	VPXOR X1, X1, X1

z2:
	VPXOR X2, X2, X2

z3:
	VPXOR X3, X3, X3

widen:
	// Y(r) = rows r | r+4, columns 0-3; Y(4+r) the same of columns 4-7.
	VPXOR      Y15, Y15, Y15
	VPUNPCKHWD Y0, Y15, Y4
	VPUNPCKLWD Y0, Y15, Y0
	VPUNPCKHWD Y1, Y15, Y5
	VPUNPCKLWD Y1, Y15, Y1
	VPUNPCKHWD Y2, Y15, Y6
	VPUNPCKLWD Y2, Y15, Y2
	VPUNPCKHWD Y3, Y15, Y7
	VPUNPCKLWD Y3, Y15, Y3

	// Interleave row pairs: Y8 = rows 0, 1 of columns 0, 1 | rows 4, 5 of
	// the same; Y9 = columns 2, 3.
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// Y(c) = column c, rows 0-3 | 4-7.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7

	MOVQ  DI, DX
	TESTQ BX, BX
	JEQ   store
	ADDQ  $32, DX

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
