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

// MULROWSBF16512 is mulRowsAVX512 with x in bfloat16: each gathered 16 columns are 32 bytes,
// widened exactly (zero-extend, shift left 16) before the float32
// multiply-add. R11 is the column offset in y's bytes, R15 the gathered
// matrix plus half of it. The prefetch distances are the float32 kernel's
// in bytes: twice the nonzeros, for rows half as long. The blocks of 8 and
// 2 vectors prefetch with hint Hn, Dn nonzeros ahead (narrower ones: into
// L1, 192 ahead); mulRowsBF16FarAVX512 prefetches into L2 four times as
// far, as mulRowsFarAVX512 does.
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
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	VMOVUPS 256(AX), Z4 \
	VMOVUPS 320(AX), Z5 \
	VMOVUPS 384(AX), Z6 \
	VMOVUPS 448(AX), Z7 \
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
	VPMOVZXWD 0(AX), Z8 \
	VPSLLD $16, Z8, Z8 \
	VFMADD231PS Z8, Z31, Z0 \
	VPMOVZXWD 32(AX), Z9 \
	VPSLLD $16, Z9, Z9 \
	VFMADD231PS Z9, Z31, Z1 \
	VPMOVZXWD 64(AX), Z10 \
	VPSLLD $16, Z10, Z10 \
	VFMADD231PS Z10, Z31, Z2 \
	VPMOVZXWD 96(AX), Z11 \
	VPSLLD $16, Z11, Z11 \
	VFMADD231PS Z11, Z31, Z3 \
	VPMOVZXWD 128(AX), Z12 \
	VPSLLD $16, Z12, Z12 \
	VFMADD231PS Z12, Z31, Z4 \
	VPMOVZXWD 160(AX), Z13 \
	VPSLLD $16, Z13, Z13 \
	VFMADD231PS Z13, Z31, Z5 \
	VPMOVZXWD 192(AX), Z14 \
	VPSLLD $16, Z14, Z14 \
	VFMADD231PS Z14, Z31, Z6 \
	VPMOVZXWD 224(AX), Z15 \
	VPSLLD $16, Z15, Z15 \
	VFMADD231PS Z15, Z31, Z7 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_b8loop \
mulbf16_b8store: \
	LEAQ (R12)(R11*1), AX \
	ST Z0, 0(AX) \
	ST Z1, 64(AX) \
	ST Z2, 128(AX) \
	ST Z3, 192(AX) \
	ST Z4, 256(AX) \
	ST Z5, 320(AX) \
	ST Z6, 384(AX) \
	ST Z7, 448(AX) \
	ADDQ $512, R11 \
	JMP  mulbf16_col \
mulbf16_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulbf16_b2zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
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
	VPMOVZXWD 0(AX), Z8 \
	VPSLLD $16, Z8, Z8 \
	VFMADD231PS Z8, Z31, Z0 \
	VPMOVZXWD 32(AX), Z9 \
	VPSLLD $16, Z9, Z9 \
	VFMADD231PS Z9, Z31, Z1 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_b2loop \
mulbf16_b2store: \
	LEAQ (R12)(R11*1), AX \
	ST Z0, 0(AX) \
	ST Z1, 64(AX) \
	ADDQ $128, R11 \
	JMP  mulbf16_col \
mulbf16_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulbf16_b1zero \
	VMOVUPS 0(AX), Z0 \
	JMP  mulbf16_b1start \
mulbf16_b1zero: \
	VPXORD Z0, Z0, Z0 \
mulbf16_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulbf16_b1store \
mulbf16_b1loop: \
	PF_ROW(192) \
	PREFETCHT0 0(AX) \
	CUR_ROW \
	VALUE512 \
	VPMOVZXWD 0(AX), Z8 \
	VPSLLD $16, Z8, Z8 \
	VFMADD231PS Z8, Z31, Z0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulbf16_b1loop \
mulbf16_b1store: \
	LEAQ (R12)(R11*1), AX \
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
	MOVQ AX, X15
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
