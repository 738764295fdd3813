//go:build !noasm

#include "textflag.h"

// The masked row kernel computes y = A·drop(x) (mulRowsMaskedAVX512 and
// its far twin): the row kernel of kernel_amd64.s whose every gathered
// vector is first multiplied by scale under a k-mask of keep bits, zeroing
// the dropped elements (VMULPS.Z), and then multiply-added as the plain
// kernel does. dropmask.Apply's copy computes the same x·scale or +0, and
// the plain kernel the same multiply-add, so the result is the plain
// kernel's on the dropped copy, bit for bit.
//
// The keep bits of nonzero p are row brows[p] of bits, stride bytes a
// row, bit c%8 of byte c/8 keeping column c: the 16 bits of a vector
// starting at column c are the word at byte c/8, loaded into an opmask.
//
// The bits cost the loads of a row index and a word per nonzero and
// block, and a multiplication per vector: on one core of an AMD EPYC (Zen
// 4), gathering rows of 100 floats from 600,000 for 900,000 nonzeros, the
// far masked kernel took 1.15–1.19× the CPU time of the far plain kernel
// on the same rows, and the AVX2 one 1.37–1.39× mulRowsAVX2's
// (BenchmarkMaskedKernelOneCore, three runs); without prefetching the
// bits (PF_BITS) the AVX-512 kernel took 1.26–1.47×. Copying and dropping
// the rows instead costs more than that (BenchmarkMulCSRMasked).
//
// Registers as in kernel_amd64.s, with DI the keep bits' row indices
// (brows) and bitcol-8(SP) the bits' base plus the column block's byte
// offset in them; Z30 holds scale, Z8–Z15 the dropped vectors.

// PF_ROW points AX at the block of the row dist nonzeros ahead.
#define PF_ROW(dist) \
	LEAQ dist(BX), AX \
	CMPQ AX, R14 \
	CMOVQGT R14, AX \
	MOVLQSX (SI)(AX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

// PF_BITS prefetches the keep bits of the column block dist nonzeros ahead.
#define PF_BITS(dist) \
	LEAQ dist(BX), AX \
	CMPQ AX, R14 \
	CMOVQGT R14, AX \
	MOVLQSX (DI)(AX*4), AX \
	IMULQ stride+200(FP), AX \
	ADDQ bitcol-8(SP), AX \
	PREFETCHT0 (AX)

// CUR_ROW points AX at the block of the row of nonzero BX.
#define CUR_ROW \
	MOVLQSX (SI)(BX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

// CUR_BITS points AX at the keep bits of the column block of nonzero BX.
#define CUR_BITS \
	MOVLQSX (DI)(BX*4), AX \
	IMULQ stride+200(FP), AX \
	ADDQ bitcol-8(SP), AX

#define VALUE512 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Z31

// DROPFMA multiplies the vector at off(AX) by scale under mask k, zeroing
// the dropped lanes, into tmp, and multiply-adds it into acc.
#define DROPFMA(off, k, tmp, acc) \
	VMULPS.Z off(AX), Z30, k, tmp \
	VFMADD231PS tmp, Z31, acc

// MASKROWS512 is the masked AVX-512 row kernel; its blocks of 8, 4, 2 and
// 1 vectors prefetch rows with hint Hn, Dn nonzeros ahead, and their keep
// bits into L1 as far ahead; the masked block, under a line a row, into L1
// 96 ahead, as the plain kernel's.
#define MASKROWS512(H8, D8, H4, D4, H2, D2, H1, D1) \
	MOVQ offsets_base+0(FP), R8 \
	MOVQ offsets_len+8(FP), R9 \
	DECQ R9 \
	JLE  maskavx512_done \
	LEAQ (R8)(R9*8), R9 \
	MOVQ (R9), R14 \
	DECQ R14 \
	MOVQ indices_base+24(FP), SI \
	MOVQ values_base+48(FP), DX \
	MOVQ brows_base+176(FP), DI \
	MOVQ ldx+96(FP), R10 \
	MOVQ y_base+112(FP), R12 \
	SHLQ $2, R10 \
	MOVL $0x3f800000, AX \
	VPBROADCASTD AX, Z31 \
	VBROADCASTSS scale+208(FP), Z30 \
maskavx512_row: \
	MOVQ (R8), R13 \
	MOVQ 8(R8), CX \
	XORQ R11, R11 \
maskavx512_col: \
	MOVQ width+104(FP), AX \
	SHLQ $2, AX \
	SUBQ R11, AX \
	JLE  maskavx512_next \
	MOVQ x_base+72(FP), R15 \
	ADDQ R11, R15 \
	MOVQ R11, BX \
	SHRQ $5, BX \
	ADDQ bits_base+152(FP), BX \
	MOVQ BX, bitcol-8(SP) \
	CMPQ AX, $512 \
	JGE  maskavx512_b8 \
	CMPQ AX, $256 \
	JGE  maskavx512_b4 \
	CMPQ AX, $128 \
	JGE  maskavx512_b2 \
	CMPQ AX, $64 \
	JGE  maskavx512_b1 \
	JMP  maskavx512_bm \
maskavx512_b8: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx512_b8zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	VMOVUPS 256(AX), Z4 \
	VMOVUPS 320(AX), Z5 \
	VMOVUPS 384(AX), Z6 \
	VMOVUPS 448(AX), Z7 \
	JMP  maskavx512_b8start \
maskavx512_b8zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
maskavx512_b8start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx512_b8store \
maskavx512_b8loop: \
	PF_ROW(D8) \
	H8 0(AX) \
	H8 64(AX) \
	H8 128(AX) \
	H8 192(AX) \
	H8 256(AX) \
	H8 320(AX) \
	H8 384(AX) \
	H8 448(AX) \
	PF_BITS(D8) \
	CUR_BITS \
	KMOVQ 0(AX), K1 \
	KMOVQ 8(AX), K5 \
	KSHIFTRQ $16, K1, K2 \
	KSHIFTRQ $32, K1, K3 \
	KSHIFTRQ $48, K1, K4 \
	KSHIFTRQ $16, K5, K6 \
	KSHIFTRQ $32, K5, K7 \
	CUR_ROW \
	VALUE512 \
	DROPFMA(0, K1, Z8, Z0) \
	DROPFMA(64, K2, Z9, Z1) \
	DROPFMA(128, K3, Z10, Z2) \
	DROPFMA(192, K4, Z11, Z3) \
	DROPFMA(256, K5, Z12, Z4) \
	DROPFMA(320, K6, Z13, Z5) \
	DROPFMA(384, K7, Z14, Z6) \
	KSHIFTRQ $48, K5, K1 \
	DROPFMA(448, K1, Z15, Z7) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx512_b8loop \
maskavx512_b8store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	VMOVUPS Z1, 64(AX) \
	VMOVUPS Z2, 128(AX) \
	VMOVUPS Z3, 192(AX) \
	VMOVUPS Z4, 256(AX) \
	VMOVUPS Z5, 320(AX) \
	VMOVUPS Z6, 384(AX) \
	VMOVUPS Z7, 448(AX) \
	ADDQ $512, R11 \
	JMP  maskavx512_col \
maskavx512_b4: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx512_b4zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	JMP  maskavx512_b4start \
maskavx512_b4zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
maskavx512_b4start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx512_b4store \
maskavx512_b4loop: \
	PF_ROW(D4) \
	H4 0(AX) \
	H4 64(AX) \
	H4 128(AX) \
	H4 192(AX) \
	PF_BITS(D4) \
	CUR_BITS \
	KMOVQ 0(AX), K1 \
	KSHIFTRQ $16, K1, K2 \
	KSHIFTRQ $32, K1, K3 \
	KSHIFTRQ $48, K1, K4 \
	CUR_ROW \
	VALUE512 \
	DROPFMA(0, K1, Z8, Z0) \
	DROPFMA(64, K2, Z9, Z1) \
	DROPFMA(128, K3, Z10, Z2) \
	DROPFMA(192, K4, Z11, Z3) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx512_b4loop \
maskavx512_b4store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	VMOVUPS Z1, 64(AX) \
	VMOVUPS Z2, 128(AX) \
	VMOVUPS Z3, 192(AX) \
	ADDQ $256, R11 \
	JMP  maskavx512_col \
maskavx512_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx512_b2zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	JMP  maskavx512_b2start \
maskavx512_b2zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
maskavx512_b2start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx512_b2store \
maskavx512_b2loop: \
	PF_ROW(D2) \
	H2 0(AX) \
	H2 64(AX) \
	PF_BITS(D2) \
	CUR_BITS \
	KMOVD 0(AX), K1 \
	KSHIFTRD $16, K1, K2 \
	CUR_ROW \
	VALUE512 \
	DROPFMA(0, K1, Z8, Z0) \
	DROPFMA(64, K2, Z9, Z1) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx512_b2loop \
maskavx512_b2store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	VMOVUPS Z1, 64(AX) \
	ADDQ $128, R11 \
	JMP  maskavx512_col \
maskavx512_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx512_b1zero \
	VMOVUPS 0(AX), Z0 \
	JMP  maskavx512_b1start \
maskavx512_b1zero: \
	VPXORD Z0, Z0, Z0 \
maskavx512_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx512_b1store \
maskavx512_b1loop: \
	PF_ROW(D1) \
	H1 0(AX) \
	PF_BITS(D1) \
	CUR_BITS \
	KMOVW 0(AX), K1 \
	CUR_ROW \
	VALUE512 \
	DROPFMA(0, K1, Z8, Z0) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx512_b1loop \
maskavx512_b1store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	ADDQ $64, R11 \
	JMP  maskavx512_col \
maskavx512_bm: \
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
	JEQ  maskavx512_bmzero \
	VMOVUPS.Z (AX), K1, Z0 \
	JMP  maskavx512_bmstart \
maskavx512_bmzero: \
	VPXORD Z0, Z0, Z0 \
maskavx512_bmstart: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx512_bmstore \
maskavx512_bmloop: \
	PF_ROW(96) \
	PREFETCHT0 (AX) \
	CUR_BITS \
	KMOVW 0(AX), K2 \
	KANDW K1, K2, K2 \
	CUR_ROW \
	VALUE512 \
	VMULPS.Z (AX), Z30, K2, Z8 \
	VFMADD231PS Z8, Z31, K1, Z0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx512_bmloop \
maskavx512_bmstore: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, K1, (AX) \
maskavx512_next: \
	MOVQ ldy+136(FP), AX \
	LEAQ (R12)(AX*4), R12 \
	ADDQ $8, R8 \
	CMPQ R8, R9 \
	JLT  maskavx512_row \
maskavx512_done: \
	VZEROUPPER \
	RET

// func mulRowsMaskedAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)
TEXT ·mulRowsMaskedAVX512(SB), NOSPLIT, $8-212
	MASKROWS512(PREFETCHT0, 12, PREFETCHT0, 24, PREFETCHT0, 48, PREFETCHT0, 96)

// func mulRowsMaskedFarAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)
TEXT ·mulRowsMaskedFarAVX512(SB), NOSPLIT, $8-212
	MASKROWS512(PREFETCHT2, 48, PREFETCHT2, 96, PREFETCHT2, 192, PREFETCHT2, 384)

// The AVX2 masked row kernel expands each vector's byte of keep bits to
// lanes (VPBROADCASTB, then each lane tests its bit), multiplies the
// gathered vector by scale and ANDs it with the lanes, as dropmask's AVX2
// Apply does, and then multiply-adds it as mulRowsAVX2 does. R9 points at
// the keep bits of the current nonzero's column block, and the end of
// offsets is kept in rowsend-16(SP); Y13 holds the lanes' bits 1, 2, …,
// 128, Y14 scale, Y12 the tail's length mask.

// bitlanes<> holds lane i's bit, 1<<i.
DATA bitlanes<>+0(SB)/4, $1
DATA bitlanes<>+4(SB)/4, $2
DATA bitlanes<>+8(SB)/4, $4
DATA bitlanes<>+12(SB)/4, $8
DATA bitlanes<>+16(SB)/4, $16
DATA bitlanes<>+20(SB)/4, $32
DATA bitlanes<>+24(SB)/4, $64
DATA bitlanes<>+28(SB)/4, $128
GLOBL bitlanes<>(SB), RODATA|NOPTR, $32

// masktail<>+32-4r holds r all-ones lanes followed by zero lanes.
DATA masktail<>+0(SB)/8, $0xffffffffffffffff
DATA masktail<>+8(SB)/8, $0xffffffffffffffff
DATA masktail<>+16(SB)/8, $0xffffffffffffffff
DATA masktail<>+24(SB)/8, $0xffffffffffffffff
DATA masktail<>+32(SB)/8, $0
DATA masktail<>+40(SB)/8, $0
DATA masktail<>+48(SB)/8, $0
DATA masktail<>+56(SB)/8, $0
GLOBL masktail<>(SB), RODATA|NOPTR, $64

// CUR_BITS256 points R9 at the keep bits of the column block of nonzero BX.
#define CUR_BITS256 \
	MOVLQSX (DI)(BX*4), R9 \
	IMULQ stride+200(FP), R9 \
	ADDQ bitcol-8(SP), R9

#define VALUE256 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Y15

// DROPFMA256 expands byte j of the keep bits to lanes in m, multiplies the
// vector at off(AX) by scale into tmp, clears its dropped lanes and
// multiply-adds it into acc.
#define DROPFMA256(j, off, m, tmp, acc) \
	VPBROADCASTB j(R9), m \
	VPAND Y13, m, m \
	VPCMPEQD Y13, m, m \
	VMULPS off(AX), Y14, tmp \
	VANDPS m, tmp, tmp \
	VFMADD231PS tmp, Y15, acc

#define MASKROWS256 \
	MOVQ offsets_base+0(FP), R8 \
	MOVQ offsets_len+8(FP), R9 \
	DECQ R9 \
	JLE  maskavx2_done \
	LEAQ (R8)(R9*8), R9 \
	MOVQ R9, rowsend-16(SP) \
	MOVQ (R9), R14 \
	DECQ R14 \
	MOVQ indices_base+24(FP), SI \
	MOVQ values_base+48(FP), DX \
	MOVQ brows_base+176(FP), DI \
	MOVQ ldx+96(FP), R10 \
	MOVQ y_base+112(FP), R12 \
	SHLQ $2, R10 \
	MOVL $0x3f800000, AX \
	VMOVD AX, X15 \
	VBROADCASTSS X15, Y15 \
	VBROADCASTSS scale+208(FP), Y14 \
	VMOVDQU bitlanes<>(SB), Y13 \
maskavx2_row: \
	MOVQ (R8), R13 \
	MOVQ 8(R8), CX \
	XORQ R11, R11 \
maskavx2_col: \
	MOVQ width+104(FP), AX \
	SHLQ $2, AX \
	SUBQ R11, AX \
	JLE  maskavx2_next \
	MOVQ x_base+72(FP), R15 \
	ADDQ R11, R15 \
	MOVQ R11, BX \
	SHRQ $5, BX \
	ADDQ bits_base+152(FP), BX \
	MOVQ BX, bitcol-8(SP) \
	CMPQ AX, $256 \
	JGE  maskavx2_b8 \
	CMPQ AX, $128 \
	JGE  maskavx2_b4 \
	CMPQ AX, $64 \
	JGE  maskavx2_b2 \
	CMPQ AX, $32 \
	JGE  maskavx2_b1 \
	JMP  maskavx2_bm \
maskavx2_b8: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx2_b8zero \
	VMOVUPS 0(AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	VMOVUPS 64(AX), Y2 \
	VMOVUPS 96(AX), Y3 \
	VMOVUPS 128(AX), Y4 \
	VMOVUPS 160(AX), Y5 \
	VMOVUPS 192(AX), Y6 \
	VMOVUPS 224(AX), Y7 \
	JMP  maskavx2_b8start \
maskavx2_b8zero: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
maskavx2_b8start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx2_b8store \
maskavx2_b8loop: \
	PF_ROW(24) \
	PREFETCHT0 0(AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PF_BITS(24) \
	CUR_BITS256 \
	CUR_ROW \
	VALUE256 \
	DROPFMA256(0, 0, Y8, Y10, Y0) \
	DROPFMA256(1, 32, Y9, Y11, Y1) \
	DROPFMA256(2, 64, Y8, Y10, Y2) \
	DROPFMA256(3, 96, Y9, Y11, Y3) \
	DROPFMA256(4, 128, Y8, Y10, Y4) \
	DROPFMA256(5, 160, Y9, Y11, Y5) \
	DROPFMA256(6, 192, Y8, Y10, Y6) \
	DROPFMA256(7, 224, Y9, Y11, Y7) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx2_b8loop \
maskavx2_b8store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Y0, 0(AX) \
	VMOVUPS Y1, 32(AX) \
	VMOVUPS Y2, 64(AX) \
	VMOVUPS Y3, 96(AX) \
	VMOVUPS Y4, 128(AX) \
	VMOVUPS Y5, 160(AX) \
	VMOVUPS Y6, 192(AX) \
	VMOVUPS Y7, 224(AX) \
	ADDQ $256, R11 \
	JMP  maskavx2_col \
maskavx2_b4: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx2_b4zero \
	VMOVUPS 0(AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	VMOVUPS 64(AX), Y2 \
	VMOVUPS 96(AX), Y3 \
	JMP  maskavx2_b4start \
maskavx2_b4zero: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
maskavx2_b4start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx2_b4store \
maskavx2_b4loop: \
	PF_ROW(48) \
	PREFETCHT0 0(AX) \
	PREFETCHT0 64(AX) \
	PF_BITS(48) \
	CUR_BITS256 \
	CUR_ROW \
	VALUE256 \
	DROPFMA256(0, 0, Y8, Y10, Y0) \
	DROPFMA256(1, 32, Y9, Y11, Y1) \
	DROPFMA256(2, 64, Y8, Y10, Y2) \
	DROPFMA256(3, 96, Y9, Y11, Y3) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx2_b4loop \
maskavx2_b4store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Y0, 0(AX) \
	VMOVUPS Y1, 32(AX) \
	VMOVUPS Y2, 64(AX) \
	VMOVUPS Y3, 96(AX) \
	ADDQ $128, R11 \
	JMP  maskavx2_col \
maskavx2_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx2_b2zero \
	VMOVUPS 0(AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	JMP  maskavx2_b2start \
maskavx2_b2zero: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
maskavx2_b2start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx2_b2store \
maskavx2_b2loop: \
	PF_ROW(96) \
	PREFETCHT0 0(AX) \
	PF_BITS(96) \
	CUR_BITS256 \
	CUR_ROW \
	VALUE256 \
	DROPFMA256(0, 0, Y8, Y10, Y0) \
	DROPFMA256(1, 32, Y9, Y11, Y1) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx2_b2loop \
maskavx2_b2store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Y0, 0(AX) \
	VMOVUPS Y1, 32(AX) \
	ADDQ $64, R11 \
	JMP  maskavx2_col \
maskavx2_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx2_b1zero \
	VMOVUPS 0(AX), Y0 \
	JMP  maskavx2_b1start \
maskavx2_b1zero: \
	VXORPS Y0, Y0, Y0 \
maskavx2_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx2_b1store \
maskavx2_b1loop: \
	PF_ROW(96) \
	PREFETCHT0 0(AX) \
	PF_BITS(96) \
	CUR_BITS256 \
	CUR_ROW \
	VALUE256 \
	DROPFMA256(0, 0, Y8, Y10, Y0) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx2_b1loop \
maskavx2_b1store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Y0, 0(AX) \
	ADDQ $32, R11 \
	JMP  maskavx2_col \
maskavx2_bm: \
	LEAQ masktail<>+32(SB), BX \
	SUBQ AX, BX \
	VMOVDQU (BX), Y12 \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  maskavx2_bmzero \
	VMASKMOVPS (AX), Y12, Y0 \
	JMP  maskavx2_bmstart \
maskavx2_bmzero: \
	VXORPS Y0, Y0, Y0 \
maskavx2_bmstart: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  maskavx2_bmstore \
maskavx2_bmloop: \
	PF_ROW(96) \
	PREFETCHT0 (AX) \
	CUR_BITS256 \
	CUR_ROW \
	VALUE256 \
	VPBROADCASTB 0(R9), Y8 \
	VPAND Y13, Y8, Y8 \
	VPCMPEQD Y13, Y8, Y8 \
	VMASKMOVPS (AX), Y12, Y10 \
	VMULPS Y14, Y10, Y10 \
	VANDPS Y8, Y10, Y10 \
	VFMADD231PS Y10, Y15, Y0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  maskavx2_bmloop \
maskavx2_bmstore: \
	LEAQ (R12)(R11*1), AX \
	VMASKMOVPS Y0, Y12, (AX) \
maskavx2_next: \
	MOVQ ldy+136(FP), AX \
	LEAQ (R12)(AX*4), R12 \
	ADDQ $8, R8 \
	CMPQ R8, rowsend-16(SP) \
	JLT  maskavx2_row \
maskavx2_done: \
	VZEROUPPER \
	RET

// func mulRowsMaskedAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)
TEXT ·mulRowsMaskedAVX2(SB), NOSPLIT, $16-212
	MASKROWS256
