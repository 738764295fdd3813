//go:build !noasm

#include "textflag.h"

// transposeAVX512 moves a block of up to 16 rows 16 columns at a time: load
// the strip's rows into Z0-Z15 (masked for the last, short strip), transpose
// 16×16 in registers, and store each column's lanes with one masked store.
// Rows past h hold stale data; the last shuffle zeroes their lanes (K3).
// Each row load prefetches the same columns h rows further on: the next
// panel, which packA reads next. Without it packing from memory is 2-3.5x
// slower: the hardware prefetchers follow h short streams poorly.
//
// Registers: SI is the strip in src, DI the strip in dst, DX the row being
// loaded or the column being stored, CX the columns left, R9 the row stride
// of src in bytes, R10 h, R11 the column stride of dst in bytes, R12 16 dst
// columns in bytes, R13 h rows of src in bytes; K1 masks the columns
// loaded, K2 the lanes stored and K3 the lanes kept.

#define LOADROW(ZR, n) \
	CMPQ R10, $n; \
	JEQ  loaded; \
	ADDQ R9, DX; \
	PREFETCHT0 (DX)(R13*1); \
	VMOVUPS.Z (DX), K1, ZR

// Stage 1 interleaves rows 2i and 2i+1, stage 2 pairs of those: Z(4j+c)
// then holds, in 128-bit lane L, column 4L+c of rows 4j..4j+3.
#define UNPCK32(A, B, LO, HI) \
	VUNPCKLPS B, A, LO; \
	VUNPCKHPS B, A, HI

#define UNPCK64(A, B, LO, HI) \
	VUNPCKLPD B, A, LO; \
	VUNPCKHPD B, A, HI

// Stage 3 and 4 transpose the 128-bit lanes of Z(c), Z(4+c), Z(8+c),
// Z(12+c) through T0-T3 into columns c, 4+c, 8+c, 12+c (O0-O3).
#define LANES(A, B, C, D, T0, T1, T2, T3, O0, O1, O2, O3) \
	VSHUFF32X4 $0x44, B, A, T0; \
	VSHUFF32X4 $0xee, B, A, T1; \
	VSHUFF32X4 $0x44, D, C, T2; \
	VSHUFF32X4 $0xee, D, C, T3; \
	VSHUFF32X4.Z $0x88, T2, T0, K3, O0; \
	VSHUFF32X4.Z $0xdd, T2, T0, K3, O1; \
	VSHUFF32X4.Z $0x88, T3, T1, K3, O2; \
	VSHUFF32X4.Z $0xdd, T3, T1, K3, O3

#define STORECOL(ZR) \
	VMOVUPS ZR, K2, (DX); \
	ADDQ    R11, DX

#define STORETAIL(ZR, n) \
	VMOVUPS ZR, K2, (DX); \
	CMPQ    CX, $n; \
	JEQ     done; \
	ADDQ    R11, DX

// func transposeAVX512(dst *float32, ldd, lanes int, src *float32, lds, h, kb int)
TEXT ·transposeAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R11
	SHLQ $2, R11
	MOVQ R11, R12
	SHLQ $4, R12
	MOVQ lanes+16(FP), CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2
	MOVQ src+24(FP), SI
	MOVQ lds+32(FP), R9
	SHLQ $2, R9
	MOVQ h+40(FP), R10
	MOVQ R10, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K3
	MOVQ R10, R13
	IMULQ R9, R13
	MOVQ kb+48(FP), CX
	TESTQ CX, CX
	JEQ   done

strip:
	MOVL $0xffff, AX
	CMPQ CX, $16
	JGE  fullmask
	MOVL $1, AX
	SHLL CX, AX
	DECL AX

fullmask:
	KMOVW AX, K1
	MOVQ  SI, DX
	PREFETCHT0 (DX)(R13*1)
	VMOVUPS.Z (DX), K1, Z0
	LOADROW(Z1, 1)
	LOADROW(Z2, 2)
	LOADROW(Z3, 3)
	LOADROW(Z4, 4)
	LOADROW(Z5, 5)
	LOADROW(Z6, 6)
	LOADROW(Z7, 7)
	LOADROW(Z8, 8)
	LOADROW(Z9, 9)
	LOADROW(Z10, 10)
	LOADROW(Z11, 11)
	LOADROW(Z12, 12)
	LOADROW(Z13, 13)
	LOADROW(Z14, 14)
	LOADROW(Z15, 15)

loaded:
	UNPCK32(Z0, Z1, Z16, Z17)
	UNPCK32(Z2, Z3, Z18, Z19)
	UNPCK32(Z4, Z5, Z20, Z21)
	UNPCK32(Z6, Z7, Z22, Z23)
	UNPCK32(Z8, Z9, Z24, Z25)
	UNPCK32(Z10, Z11, Z26, Z27)
	UNPCK32(Z12, Z13, Z28, Z29)
	UNPCK32(Z14, Z15, Z30, Z31)
	UNPCK64(Z16, Z18, Z0, Z1)
	UNPCK64(Z17, Z19, Z2, Z3)
	UNPCK64(Z20, Z22, Z4, Z5)
	UNPCK64(Z21, Z23, Z6, Z7)
	UNPCK64(Z24, Z26, Z8, Z9)
	UNPCK64(Z25, Z27, Z10, Z11)
	UNPCK64(Z28, Z30, Z12, Z13)
	UNPCK64(Z29, Z31, Z14, Z15)
	LANES(Z0, Z4, Z8, Z12, Z16, Z17, Z18, Z19, Z0, Z4, Z8, Z12)
	LANES(Z1, Z5, Z9, Z13, Z20, Z21, Z22, Z23, Z1, Z5, Z9, Z13)
	LANES(Z2, Z6, Z10, Z14, Z24, Z25, Z26, Z27, Z2, Z6, Z10, Z14)
	LANES(Z3, Z7, Z11, Z15, Z28, Z29, Z30, Z31, Z3, Z7, Z11, Z15)

	MOVQ DI, DX
	CMPQ CX, $16
	JLT  tail
	STORECOL(Z0)
	STORECOL(Z1)
	STORECOL(Z2)
	STORECOL(Z3)
	STORECOL(Z4)
	STORECOL(Z5)
	STORECOL(Z6)
	STORECOL(Z7)
	STORECOL(Z8)
	STORECOL(Z9)
	STORECOL(Z10)
	STORECOL(Z11)
	STORECOL(Z12)
	STORECOL(Z13)
	STORECOL(Z14)
	STORECOL(Z15)
	ADDQ $64, SI
	ADDQ R12, DI
	SUBQ $16, CX
	JNE  strip
	JMP  done

tail:
	STORETAIL(Z0, 1)
	STORETAIL(Z1, 2)
	STORETAIL(Z2, 3)
	STORETAIL(Z3, 4)
	STORETAIL(Z4, 5)
	STORETAIL(Z5, 6)
	STORETAIL(Z6, 7)
	STORETAIL(Z7, 8)
	STORETAIL(Z8, 9)
	STORETAIL(Z9, 10)
	STORETAIL(Z10, 11)
	STORETAIL(Z11, 12)
	STORETAIL(Z12, 13)
	STORETAIL(Z13, 14)
	STORETAIL(Z14, 15)

done:
	VZEROUPPER
	RET
