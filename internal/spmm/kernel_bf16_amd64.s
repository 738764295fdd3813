//go:build !noasm

#include "textflag.h"

// The bfloat16 row kernels, y = A·x with x in bf16, in the layout and
// registers of kernel_amd64.s, whose macros it repeats.

#define PF_ROW(dist) \
	LEAQ dist(BX), AX \
	CMPQ AX, R14 \
	CMOVQGT R14, AX \
	MOVLQSX (SI)(AX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

#define CUR_ROW \
	MOVLQSX (SI)(BX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

#define VALUE512 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Z31

#define VALUE256 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Y15

// The permutations between y's column order and the even/odd split of the
// AVX-512 accumulators: bf16even and bf16odd gather the even and odd
// columns of 32 (two vectors of 16), bf16lo and bf16hi interleave an even
// and an odd vector back into columns 0-15 and 16-31.
DATA bf16even<>+0(SB)/8, $0x0000000200000000
DATA bf16even<>+8(SB)/8, $0x0000000600000004
DATA bf16even<>+16(SB)/8, $0x0000000a00000008
DATA bf16even<>+24(SB)/8, $0x0000000e0000000c
DATA bf16even<>+32(SB)/8, $0x0000001200000010
DATA bf16even<>+40(SB)/8, $0x0000001600000014
DATA bf16even<>+48(SB)/8, $0x0000001a00000018
DATA bf16even<>+56(SB)/8, $0x0000001e0000001c
GLOBL bf16even<>(SB), RODATA|NOPTR, $64

DATA bf16odd<>+0(SB)/8, $0x0000000300000001
DATA bf16odd<>+8(SB)/8, $0x0000000700000005
DATA bf16odd<>+16(SB)/8, $0x0000000b00000009
DATA bf16odd<>+24(SB)/8, $0x0000000f0000000d
DATA bf16odd<>+32(SB)/8, $0x0000001300000011
DATA bf16odd<>+40(SB)/8, $0x0000001700000015
DATA bf16odd<>+48(SB)/8, $0x0000001b00000019
DATA bf16odd<>+56(SB)/8, $0x0000001f0000001d
GLOBL bf16odd<>(SB), RODATA|NOPTR, $64

DATA bf16lo<>+0(SB)/8, $0x0000001000000000
DATA bf16lo<>+8(SB)/8, $0x0000001100000001
DATA bf16lo<>+16(SB)/8, $0x0000001200000002
DATA bf16lo<>+24(SB)/8, $0x0000001300000003
DATA bf16lo<>+32(SB)/8, $0x0000001400000004
DATA bf16lo<>+40(SB)/8, $0x0000001500000005
DATA bf16lo<>+48(SB)/8, $0x0000001600000006
DATA bf16lo<>+56(SB)/8, $0x0000001700000007
GLOBL bf16lo<>(SB), RODATA|NOPTR, $64

DATA bf16hi<>+0(SB)/8, $0x0000001800000008
DATA bf16hi<>+8(SB)/8, $0x0000001900000009
DATA bf16hi<>+16(SB)/8, $0x0000001a0000000a
DATA bf16hi<>+24(SB)/8, $0x0000001b0000000b
DATA bf16hi<>+32(SB)/8, $0x0000001c0000000c
DATA bf16hi<>+40(SB)/8, $0x0000001d0000000d
DATA bf16hi<>+48(SB)/8, $0x0000001e0000000e
DATA bf16hi<>+56(SB)/8, $0x0000001f0000000f
GLOBL bf16hi<>(SB), RODATA|NOPTR, $64

// BF16SPLIT multiplies-adds 32 gathered bf16 columns at off(AX), read as
// 16 doublewords, into the even columns' accumulator E and the odd ones' O:
// shifted left 16, a doubleword is its even (low) word widened exactly; and
// with 0xffff0000 (Z30), its odd (high) word. No shuffles per nonzero.
#define BF16SPLIT(off, T, U, E, O) \
	VMOVDQU32 off(AX), T \
	VPSLLD $16, T, U \
	VPANDD Z30, T, T \
	VFMADD231PS U, Z31, E \
	VFMADD231PS T, Z31, O

// BF16LOAD loads y's 32 columns at lo(AX) and hi(AX) into E (even) and O (odd).
#define BF16LOAD(lo, hi, E, O) \
	VMOVUPS lo(AX), E \
	VMOVAPS E, O \
	VPERMT2PS hi(AX), Z26, E \
	VPERMT2PS hi(AX), Z27, O

// BF16STORE interleaves E and O (clobbering E and T) and stores the 32
// columns at lo(AX) and hi(AX) with ST.
#define BF16STORE(ST, lo, hi, E, O, T) \
	VMOVAPS E, T \
	VPERMT2PS O, Z28, T \
	VPERMT2PS O, Z29, E \
	ST T, lo(AX) \
	ST E, hi(AX)

// MULROWSBF16512 is mulRowsAVX512 with x in bfloat16. The blocks of 128,
// 32 and 16 columns read the gathered row with plain loads and keep the
// even and odd columns in separate accumulators (BF16SPLIT), permuted from
// and to y's order once per row and block; each column of y still takes
// the same multiply-adds in the same order as in mulRowsAVX512 on the
// widened x. The masked tail widens each 16 columns (zero-extend, shift
// left 16). R11 is the column offset in y's bytes, R15 the gathered
// matrix plus half of it. The prefetch distances are the float32 kernel's
// in bytes: twice the nonzeros, for rows half as long. The blocks of 128
// and 32 columns prefetch with hint Hn, Dn nonzeros ahead (narrower ones:
// into L1, 192 ahead); mulRowsBF16FarAVX512 prefetches into L2 four times
// as far, as mulRowsFarAVX512 does.
#define MULROWSBF16512(H8, D8, H2, D2, ST, FENCE) \
	MOVQ offsets_base+0(FP), R8 \
	MOVQ offsets_len+8(FP), R9 \
	DECQ R9 \
	JLE  mulbf16_done \
	LEAQ (R8)(R9*8), R9 \
	MOVQ (R9), R14 \
	DECQ R14 \
	MOVQ indices_base+24(FP), SI \
	MOVQ values_base+48(FP), DX \
	MOVQ x_base+72(FP), DI \
	MOVQ ldx+96(FP), R10 \
	MOVQ y_base+112(FP), R12 \
	SHLQ $1, R10 \
	MOVL $0x3f800000, AX \
	VPBROADCASTD AX, Z31 \
	MOVL $0xffff0000, AX \
	VPBROADCASTD AX, Z30 \
	VMOVDQU32 bf16even<>(SB), Z26 \
	VMOVDQU32 bf16odd<>(SB), Z27 \
	VMOVDQU32 bf16lo<>(SB), Z28 \
	VMOVDQU32 bf16hi<>(SB), Z29 \
mulbf16_row: \
	MOVQ (R8), R13 \
	MOVQ 8(R8), CX \
	XORQ R11, R11 \
mulbf16_col: \
	MOVQ width+104(FP), AX \
	SHLQ $2, AX \
	SUBQ R11, AX \
	JLE  mulbf16_next \
	MOVQ R11, R15 \
	SHRQ $1, R15 \
	ADDQ DI, R15 \
	CMPQ AX, $512 \
	JGE  mulbf16_b8 \
	CMPQ AX, $128 \
	JGE  mulbf16_b2 \
	CMPQ AX, $64 \
	JGE  mulbf16_b1 \
	JMP  mulbf16_bm \
mulbf16_b8: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulbf16_b8zero \
	BF16LOAD(0, 64, Z0, Z1) \
	BF16LOAD(128, 192, Z2, Z3) \
	BF16LOAD(256, 320, Z4, Z5) \
	BF16LOAD(384, 448, Z6, Z7) \
	JMP  mulbf16_b8start \
mulbf16_b8zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
mulbf16_b8start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulbf16_b8store \
mulbf16_b8loop: \
	PF_ROW(D8) \
	H8 0(AX) \
	H8 64(AX) \
	H8 128(AX) \
	H8 192(AX) \
	CUR_ROW \
	VALUE512 \
	BF16SPLIT(0, Z8, Z9, Z0, Z1) \
	BF16SPLIT(64, Z10, Z11, Z2, Z3) \
	BF16SPLIT(128, Z12, Z13, Z4, Z5) \
	BF16SPLIT(192, Z14, Z15, Z6, Z7) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_b8loop \
mulbf16_b8store: \
	LEAQ (R12)(R11*1), AX \
	BF16STORE(ST, 0, 64, Z0, Z1, Z8) \
	BF16STORE(ST, 128, 192, Z2, Z3, Z9) \
	BF16STORE(ST, 256, 320, Z4, Z5, Z10) \
	BF16STORE(ST, 384, 448, Z6, Z7, Z11) \
	ADDQ $512, R11 \
	JMP  mulbf16_col \
mulbf16_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulbf16_b2zero \
	BF16LOAD(0, 64, Z0, Z1) \
	JMP  mulbf16_b2start \
mulbf16_b2zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
mulbf16_b2start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulbf16_b2store \
mulbf16_b2loop: \
	PF_ROW(D2) \
	H2 0(AX) \
	CUR_ROW \
	VALUE512 \
	BF16SPLIT(0, Z8, Z9, Z0, Z1) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_b2loop \
mulbf16_b2store: \
	LEAQ (R12)(R11*1), AX \
	BF16STORE(ST, 0, 64, Z0, Z1, Z8) \
	ADDQ $128, R11 \
	JMP  mulbf16_col \
mulbf16_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulbf16_b1zero \
	VPERMPS (AX), Z26, Z0 \
	VPERMPS (AX), Z27, Z1 \
	JMP  mulbf16_b1start \
mulbf16_b1zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
mulbf16_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulbf16_b1store \
mulbf16_b1loop: \
	PF_ROW(192) \
	PREFETCHT0 0(AX) \
	CUR_ROW \
	VALUE512 \
	VMOVDQU32 0(AX), Y8 \
	VPSLLD $16, Y8, Y9 \
	VPANDD Y30, Y8, Y8 \
	VFMADD231PS Y9, Y31, Y0 \
	VFMADD231PS Y8, Y31, Y1 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_b1loop \
mulbf16_b1store: \
	LEAQ (R12)(R11*1), AX \
	VPERMT2PS Z1, Z28, Z0 \
	ST Z0, 0(AX) \
	ADDQ $64, R11 \
	JMP  mulbf16_col \
mulbf16_bm: \
	SHRQ $2, AX \
	MOVQ CX, BX \
	MOVQ AX, CX \
	MOVL $1, AX \
	SHLL CX, AX \
	DECL AX \
	KMOVW AX, K1 \
	MOVQ BX, CX \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulbf16_bmzero \
	VMOVUPS.Z (AX), K1, Z0 \
	JMP  mulbf16_bmstart \
mulbf16_bmzero: \
	VPXORD Z0, Z0, Z0 \
mulbf16_bmstart: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulbf16_bmstore \
mulbf16_bmloop: \
	PF_ROW(192) \
	PREFETCHT0 (AX) \
	CUR_ROW \
	VALUE512 \
	VMOVDQU16.Z (AX), K1, Y8 \
	VPMOVZXWD Y8, Z8 \
	VPSLLD $16, Z8, Z8 \
	VFMADD231PS Z8, Z31, K1, Z0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_bmloop \
mulbf16_bmstore: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, K1, (AX) \
mulbf16_next: \
	MOVQ ldy+136(FP), AX \
	LEAQ (R12)(AX*4), R12 \
	ADDQ $8, R8 \
	CMPQ R8, R9 \
	JLT  mulbf16_row \
mulbf16_done: \
	FENCE \
	VZEROUPPER \
	RET

// func mulRowsBF16AVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsBF16AVX512(SB), NOSPLIT, $0-145
	MULROWSBF16512(PREFETCHT0, 24, PREFETCHT0, 96, VMOVUPS, NOP)

// func mulRowsBF16StreamAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsBF16StreamAVX512(SB), NOSPLIT, $0-145
	MULROWSBF16512(PREFETCHT0, 24, PREFETCHT0, 96, VMOVNTPS, SFENCE)

// func mulRowsBF16FarAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsBF16FarAVX512(SB), NOSPLIT, $0-145
	MULROWSBF16512(PREFETCHT2, 96, PREFETCHT2, 384, VMOVUPS, NOP)

// func mulRowsBF16FarStreamAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsBF16FarStreamAVX512(SB), NOSPLIT, $0-145
	MULROWSBF16512(PREFETCHT2, 96, PREFETCHT2, 384, VMOVNTPS, SFENCE)

// func mulRowsBF16AVX2(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool)
//
// mulRowsBF16AVX2 is mulRowsBF16AVX512 on AVX2 (Y15 holds the value, so
// the 64-column block reuses Y8): blocks of 64, 32 and 8 columns, then the last
// columns one at a time (AVX2 has no masked load of 16-bit words), each
// walking the row's nonzeros.
TEXT ·mulRowsBF16AVX2(SB), NOSPLIT, $0-145
	MOVQ offsets_base+0(FP), R8
	MOVQ offsets_len+8(FP), R9
	DECQ R9
	JLE  mulbf2_done
	LEAQ (R8)(R9*8), R9
	MOVQ (R9), R14
	DECQ R14
	MOVQ indices_base+24(FP), SI
	MOVQ values_base+48(FP), DX
	MOVQ x_base+72(FP), DI
	MOVQ ldx+96(FP), R10
	MOVQ y_base+112(FP), R12
	SHLQ $1, R10
	MOVL $0x3f800000, AX
	VMOVQ AX, X15
	VBROADCASTSS X15, Y15

mulbf2_row:
	MOVQ (R8), R13
	MOVQ 8(R8), CX
	XORQ R11, R11

mulbf2_col:
	MOVQ width+104(FP), AX
	SHLQ $2, AX
	SUBQ R11, AX
	JLE  mulbf2_next
	MOVQ R11, R15
	SHRQ $1, R15
	ADDQ DI, R15
	CMPQ AX, $256
	JGE  mulbf2_b8
	CMPQ AX, $128
	JGE  mulbf2_b4
	CMPQ AX, $32
	JGE  mulbf2_b1
	JMP  mulbf2_b0

mulbf2_b8:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mulbf2_b8zero
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	VMOVUPS 128(AX), Y4
	VMOVUPS 160(AX), Y5
	VMOVUPS 192(AX), Y6
	VMOVUPS 224(AX), Y7
	JMP  mulbf2_b8start
mulbf2_b8zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
mulbf2_b8start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mulbf2_b8store
mulbf2_b8loop:
	PF_ROW(48)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	CUR_ROW
	VALUE256
	VPMOVZXWD 0(AX), Y8
	VPSLLD $16, Y8, Y8
	VFMADD231PS Y8, Y15, Y0
	VPMOVZXWD 16(AX), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y9, Y15, Y1
	VPMOVZXWD 32(AX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y15, Y2
	VPMOVZXWD 48(AX), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y11, Y15, Y3
	VPMOVZXWD 64(AX), Y12
	VPSLLD $16, Y12, Y12
	VFMADD231PS Y12, Y15, Y4
	VPMOVZXWD 80(AX), Y13
	VPSLLD $16, Y13, Y13
	VFMADD231PS Y13, Y15, Y5
	VPMOVZXWD 96(AX), Y14
	VPSLLD $16, Y14, Y14
	VFMADD231PS Y14, Y15, Y6
	VPMOVZXWD 112(AX), Y8
	VPSLLD $16, Y8, Y8
	VFMADD231PS Y8, Y15, Y7
	INCQ BX
	CMPQ BX, CX
	JLT  mulbf2_b8loop
mulbf2_b8store:
	LEAQ (R12)(R11*1), AX
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 64(AX)
	VMOVUPS Y3, 96(AX)
	VMOVUPS Y4, 128(AX)
	VMOVUPS Y5, 160(AX)
	VMOVUPS Y6, 192(AX)
	VMOVUPS Y7, 224(AX)
	ADDQ $256, R11
	JMP  mulbf2_col

mulbf2_b4:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mulbf2_b4zero
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	JMP  mulbf2_b4start
mulbf2_b4zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
mulbf2_b4start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mulbf2_b4store
mulbf2_b4loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	CUR_ROW
	VALUE256
	VPMOVZXWD 0(AX), Y8
	VPSLLD $16, Y8, Y8
	VFMADD231PS Y8, Y15, Y0
	VPMOVZXWD 16(AX), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y9, Y15, Y1
	VPMOVZXWD 32(AX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y15, Y2
	VPMOVZXWD 48(AX), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y11, Y15, Y3
	INCQ BX
	CMPQ BX, CX
	JLT  mulbf2_b4loop
mulbf2_b4store:
	LEAQ (R12)(R11*1), AX
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 64(AX)
	VMOVUPS Y3, 96(AX)
	ADDQ $128, R11
	JMP  mulbf2_col

mulbf2_b1:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mulbf2_b1zero
	VMOVUPS 0(AX), Y0
	JMP  mulbf2_b1start
mulbf2_b1zero:
	VXORPS Y0, Y0, Y0
mulbf2_b1start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mulbf2_b1store
mulbf2_b1loop:
	PF_ROW(192)
	PREFETCHT0 0(AX)
	CUR_ROW
	VALUE256
	VPMOVZXWD 0(AX), Y8
	VPSLLD $16, Y8, Y8
	VFMADD231PS Y8, Y15, Y0
	INCQ BX
	CMPQ BX, CX
	JLT  mulbf2_b1loop
mulbf2_b1store:
	LEAQ (R12)(R11*1), AX
	VMOVUPS Y0, 0(AX)
	ADDQ $32, R11
	JMP  mulbf2_col

// One column: y[c] in X0, each gathered word broadcast and shifted into a
// float32.
mulbf2_b0:
	LEAQ (R12)(R11*1), AX
	VXORPS X0, X0, X0
	CMPB accumulate+144(FP), $0
	JEQ  mulbf2_b0start
	VMOVSS (AX), X0
mulbf2_b0start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mulbf2_b0store
mulbf2_b0loop:
	PF_ROW(192)
	PREFETCHT0 (AX)
	CUR_ROW
	VALUE256
	VPBROADCASTW (AX), X1
	VPSLLD $16, X1, X1
	VFMADD231SS X1, X15, X0
	INCQ BX
	CMPQ BX, CX
	JLT  mulbf2_b0loop
mulbf2_b0store:
	LEAQ (R12)(R11*1), AX
	VMOVSS X0, (AX)
	ADDQ $4, R11
	JMP  mulbf2_col

mulbf2_next:
	MOVQ ldy+136(FP), AX
	LEAQ (R12)(AX*4), R12
	ADDQ $8, R8
	CMPQ R8, R9
	JLT  mulbf2_row

mulbf2_done:
	VZEROUPPER
	RET
