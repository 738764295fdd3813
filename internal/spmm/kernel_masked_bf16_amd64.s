//go:build !noasm

#include "textflag.h"

// The bf16 masked row kernels compute y = A·drop(widen(x)) with x in
// bfloat16 (mulRowsMaskedBF16AVX512, its far twin, mulRowsMaskedBF16AVX2):
// the masked kernels of kernel_masked_amd64.s, in its layout and
// registers, whose every gathered vector of 16 (8) columns is first
// widened exactly (zero-extended to doublewords and shifted left 16), then
// multiplied by scale under its keep bits, the dropped elements made +0,
// and then multiply-added. A widened copy of the rows dropped by
// dropmask.Apply holds the same x·scale or +0, and the plain kernel makes
// the same multiply-adds in the same order, so the result is MulCSR's on
// that copy, bit for bit. The columns stay in y's order (no even/odd split
// as in kernel_bf16_amd64.s): the keep bits are y's order too.
//
// Widening with a zero-extending load and a shift costs more per column
// than the plain bf16 kernel's even/odd split, and the bits as much as in
// the float32 masked kernels: on one core of an AMD EPYC (Zen 5) shared
// with other work, gathering rows of 100 from 600,000 for 900,000
// nonzeros, the AVX-512 masked kernels (near and far) took 1.17–1.20× the
// CPU time of the plain bf16 ones on the same rows, the AVX2 one
// 1.45–1.47× (BenchmarkMaskedBF16KernelOneCore, two runs); widening,
// copying and dropping the rows instead costs three times what the masked
// product does (BenchmarkMulCSRMaskedBF16).
//
// R15 is the gathered matrix plus the column block's offset in it, half
// R11 (y's byte offset); R10 is ldx in bytes. The prefetch distances are
// the float32 masked kernel's in bytes: twice the nonzeros, for rows half
// as long.

#define PF_ROW(dist) \
	LEAQ dist(BX), AX \
	CMPQ AX, R14 \
	CMOVQGT R14, AX \
	MOVLQSX (SI)(AX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

#define PF_BITS(dist) \
	LEAQ dist(BX), AX \
	CMPQ AX, R14 \
	CMOVQGT R14, AX \
	MOVLQSX (DI)(AX*4), AX \
	IMULQ stride+200(FP), AX \
	ADDQ bitcol-8(SP), AX \
	PREFETCHT0 (AX)

#define CUR_ROW \
	MOVLQSX (SI)(BX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

#define CUR_BITS \
	MOVLQSX (DI)(BX*4), AX \
	IMULQ stride+200(FP), AX \
	ADDQ bitcol-8(SP), AX

#define VALUE512 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Z31

// WDROPFMA widens the 16 bf16 columns at off(AX) into tmp, multiplies
// them by scale under mask k, zeroing the dropped lanes, and multiply-adds
// them into acc.
#define WDROPFMA(off, k, tmp, acc) \
	VPMOVZXWD off(AX), tmp \
	VPSLLD $16, tmp, tmp \
	VMULPS.Z tmp, Z30, k, tmp \
	VFMADD231PS tmp, Z31, acc

// MASKROWSBF16512 is the bf16 masked AVX-512 row kernel; its blocks of 8,
// 4, 2 and 1 vectors prefetch rows with hint Hn, Dn nonzeros ahead, and
// their keep bits into L1 as far ahead; the masked tail, under a line a
// row, into L1 192 ahead.
#define MASKROWSBF16512(H8, D8, H4, D4, H2, D2, H1, D1) \
	MOVQ offsets_base+0(FP), R8 \
	MOVQ offsets_len+8(FP), R9 \
	DECQ R9 \
	JLE  mbf512_done \
	LEAQ (R8)(R9*8), R9 \
	MOVQ (R9), R14 \
	DECQ R14 \
	MOVQ indices_base+24(FP), SI \
	MOVQ values_base+48(FP), DX \
	MOVQ brows_base+176(FP), DI \
	MOVQ ldx+96(FP), R10 \
	MOVQ y_base+112(FP), R12 \
	SHLQ $1, R10 \
	MOVL $0x3f800000, AX \
	VPBROADCASTD AX, Z31 \
	VBROADCASTSS scale+208(FP), Z30 \
mbf512_row: \
	MOVQ (R8), R13 \
	MOVQ 8(R8), CX \
	XORQ R11, R11 \
mbf512_col: \
	MOVQ width+104(FP), AX \
	SHLQ $2, AX \
	SUBQ R11, AX \
	JLE  mbf512_next \
	MOVQ R11, R15 \
	SHRQ $1, R15 \
	ADDQ x_base+72(FP), R15 \
	MOVQ R11, BX \
	SHRQ $5, BX \
	ADDQ bits_base+152(FP), BX \
	MOVQ BX, bitcol-8(SP) \
	CMPQ AX, $512 \
	JGE  mbf512_b8 \
	CMPQ AX, $256 \
	JGE  mbf512_b4 \
	CMPQ AX, $128 \
	JGE  mbf512_b2 \
	CMPQ AX, $64 \
	JGE  mbf512_b1 \
	JMP  mbf512_bm \
mbf512_b8: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mbf512_b8zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	VMOVUPS 256(AX), Z4 \
	VMOVUPS 320(AX), Z5 \
	VMOVUPS 384(AX), Z6 \
	VMOVUPS 448(AX), Z7 \
	JMP  mbf512_b8start \
mbf512_b8zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
mbf512_b8start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mbf512_b8store \
mbf512_b8loop: \
	PF_ROW(D8) \
	H8 0(AX) \
	H8 64(AX) \
	H8 128(AX) \
	H8 192(AX) \
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
	WDROPFMA(0, K1, Z8, Z0) \
	WDROPFMA(32, K2, Z9, Z1) \
	WDROPFMA(64, K3, Z10, Z2) \
	WDROPFMA(96, K4, Z11, Z3) \
	WDROPFMA(128, K5, Z12, Z4) \
	WDROPFMA(160, K6, Z13, Z5) \
	WDROPFMA(192, K7, Z14, Z6) \
	KSHIFTRQ $48, K5, K1 \
	WDROPFMA(224, K1, Z15, Z7) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mbf512_b8loop \
mbf512_b8store: \
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
	JMP  mbf512_col \
mbf512_b4: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mbf512_b4zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	JMP  mbf512_b4start \
mbf512_b4zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
mbf512_b4start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mbf512_b4store \
mbf512_b4loop: \
	PF_ROW(D4) \
	H4 0(AX) \
	H4 64(AX) \
	PF_BITS(D4) \
	CUR_BITS \
	KMOVQ 0(AX), K1 \
	KSHIFTRQ $16, K1, K2 \
	KSHIFTRQ $32, K1, K3 \
	KSHIFTRQ $48, K1, K4 \
	CUR_ROW \
	VALUE512 \
	WDROPFMA(0, K1, Z8, Z0) \
	WDROPFMA(32, K2, Z9, Z1) \
	WDROPFMA(64, K3, Z10, Z2) \
	WDROPFMA(96, K4, Z11, Z3) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mbf512_b4loop \
mbf512_b4store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	VMOVUPS Z1, 64(AX) \
	VMOVUPS Z2, 128(AX) \
	VMOVUPS Z3, 192(AX) \
	ADDQ $256, R11 \
	JMP  mbf512_col \
mbf512_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mbf512_b2zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	JMP  mbf512_b2start \
mbf512_b2zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
mbf512_b2start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mbf512_b2store \
mbf512_b2loop: \
	PF_ROW(D2) \
	H2 0(AX) \
	PF_BITS(D2) \
	CUR_BITS \
	KMOVD 0(AX), K1 \
	KSHIFTRD $16, K1, K2 \
	CUR_ROW \
	VALUE512 \
	WDROPFMA(0, K1, Z8, Z0) \
	WDROPFMA(32, K2, Z9, Z1) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mbf512_b2loop \
mbf512_b2store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	VMOVUPS Z1, 64(AX) \
	ADDQ $128, R11 \
	JMP  mbf512_col \
mbf512_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mbf512_b1zero \
	VMOVUPS 0(AX), Z0 \
	JMP  mbf512_b1start \
mbf512_b1zero: \
	VPXORD Z0, Z0, Z0 \
mbf512_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mbf512_b1store \
mbf512_b1loop: \
	PF_ROW(D1) \
	H1 0(AX) \
	PF_BITS(D1) \
	CUR_BITS \
	KMOVW 0(AX), K1 \
	CUR_ROW \
	VALUE512 \
	WDROPFMA(0, K1, Z8, Z0) \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mbf512_b1loop \
mbf512_b1store: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, 0(AX) \
	ADDQ $64, R11 \
	JMP  mbf512_col \
mbf512_bm: \
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
	JEQ  mbf512_bmzero \
	VMOVUPS.Z (AX), K1, Z0 \
	JMP  mbf512_bmstart \
mbf512_bmzero: \
	VPXORD Z0, Z0, Z0 \
mbf512_bmstart: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mbf512_bmstore \
mbf512_bmloop: \
	PF_ROW(192) \
	PREFETCHT0 (AX) \
	CUR_BITS \
	KMOVW 0(AX), K2 \
	KANDW K1, K2, K2 \
	CUR_ROW \
	VALUE512 \
	VMOVDQU16.Z (AX), K1, Y8 \
	VPMOVZXWD Y8, Z8 \
	VPSLLD $16, Z8, Z8 \
	VMULPS.Z Z8, Z30, K2, Z8 \
	VFMADD231PS Z8, Z31, K1, Z0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mbf512_bmloop \
mbf512_bmstore: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, K1, (AX) \
mbf512_next: \
	MOVQ ldy+136(FP), AX \
	LEAQ (R12)(AX*4), R12 \
	ADDQ $8, R8 \
	CMPQ R8, R9 \
	JLT  mbf512_row \
mbf512_done: \
	VZEROUPPER \
	RET

// func mulRowsMaskedBF16AVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)
TEXT ·mulRowsMaskedBF16AVX512(SB), NOSPLIT, $8-212
	MASKROWSBF16512(PREFETCHT0, 24, PREFETCHT0, 48, PREFETCHT0, 96, PREFETCHT0, 192)

// func mulRowsMaskedBF16FarAVX512(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)
TEXT ·mulRowsMaskedBF16FarAVX512(SB), NOSPLIT, $8-212
	MASKROWSBF16512(PREFETCHT2, 96, PREFETCHT2, 192, PREFETCHT2, 384, PREFETCHT2, 768)

// The AVX2 bf16 masked row kernel expands each 8 columns' byte of keep
// bits to lanes as mulRowsMaskedAVX2 does, widens the 8 gathered columns,
// multiplies them by scale, ANDs them with the lanes and multiply-adds
// them: blocks of 64, 32, 16 and 8 columns, then the last columns one at
// a time (AVX2 has no masked load of 16-bit words), each column's lane bit
// in X12. R9 points at the keep bits of the current nonzero's column
// block, and the end of offsets is kept in rowsend-16(SP); Y13 holds the
// lanes' bits 1, 2, …, 128, Y14 scale.

// mbflanes<> holds lane i's bit, 1<<i.
DATA mbflanes<>+0(SB)/4, $1
DATA mbflanes<>+4(SB)/4, $2
DATA mbflanes<>+8(SB)/4, $4
DATA mbflanes<>+12(SB)/4, $8
DATA mbflanes<>+16(SB)/4, $16
DATA mbflanes<>+20(SB)/4, $32
DATA mbflanes<>+24(SB)/4, $64
DATA mbflanes<>+28(SB)/4, $128
GLOBL mbflanes<>(SB), RODATA|NOPTR, $32

#define CUR_BITS256 \
	MOVLQSX (DI)(BX*4), R9 \
	IMULQ stride+200(FP), R9 \
	ADDQ bitcol-8(SP), R9

#define VALUE256 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Y15

// WDROPFMA256 expands byte j of the keep bits to lanes in m, widens the 8
// bf16 columns at off(AX) into tmp, multiplies them by scale, clears
// their dropped lanes and multiply-adds them into acc.
#define WDROPFMA256(j, off, m, tmp, acc) \
	VPBROADCASTB j(R9), m \
	VPAND Y13, m, m \
	VPCMPEQD Y13, m, m \
	VPMOVZXWD off(AX), tmp \
	VPSLLD $16, tmp, tmp \
	VMULPS tmp, Y14, tmp \
	VANDPS m, tmp, tmp \
	VFMADD231PS tmp, Y15, acc

// func mulRowsMaskedBF16AVX2(offsets []int64, indices []int32, values []float32, x []uint16, ldx, width int, y []float32, ldy int, accumulate bool, bits []uint64, brows []int32, stride int, scale float32)
TEXT ·mulRowsMaskedBF16AVX2(SB), NOSPLIT, $16-212
	MOVQ offsets_base+0(FP), R8
	MOVQ offsets_len+8(FP), R9
	DECQ R9
	JLE  mbf2_done
	LEAQ (R8)(R9*8), R9
	MOVQ R9, rowsend-16(SP)
	MOVQ (R9), R14
	DECQ R14
	MOVQ indices_base+24(FP), SI
	MOVQ values_base+48(FP), DX
	MOVQ brows_base+176(FP), DI
	MOVQ ldx+96(FP), R10
	MOVQ y_base+112(FP), R12
	SHLQ $1, R10
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	VBROADCASTSS X15, Y15
	VBROADCASTSS scale+208(FP), Y14
	VMOVDQU mbflanes<>(SB), Y13

mbf2_row:
	MOVQ (R8), R13
	MOVQ 8(R8), CX
	XORQ R11, R11

mbf2_col:
	MOVQ width+104(FP), AX
	SHLQ $2, AX
	SUBQ R11, AX
	JLE  mbf2_next
	MOVQ R11, R15
	SHRQ $1, R15
	ADDQ x_base+72(FP), R15
	MOVQ R11, BX
	SHRQ $5, BX
	ADDQ bits_base+152(FP), BX
	MOVQ BX, bitcol-8(SP)
	CMPQ AX, $256
	JGE  mbf2_b8
	CMPQ AX, $128
	JGE  mbf2_b4
	CMPQ AX, $64
	JGE  mbf2_b2
	CMPQ AX, $32
	JGE  mbf2_b1
	JMP  mbf2_b0

mbf2_b8:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mbf2_b8zero
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	VMOVUPS 128(AX), Y4
	VMOVUPS 160(AX), Y5
	VMOVUPS 192(AX), Y6
	VMOVUPS 224(AX), Y7
	JMP  mbf2_b8start
mbf2_b8zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
mbf2_b8start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mbf2_b8store
mbf2_b8loop:
	PF_ROW(48)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PF_BITS(48)
	CUR_BITS256
	CUR_ROW
	VALUE256
	WDROPFMA256(0, 0, Y8, Y10, Y0)
	WDROPFMA256(1, 16, Y9, Y11, Y1)
	WDROPFMA256(2, 32, Y8, Y10, Y2)
	WDROPFMA256(3, 48, Y9, Y11, Y3)
	WDROPFMA256(4, 64, Y8, Y10, Y4)
	WDROPFMA256(5, 80, Y9, Y11, Y5)
	WDROPFMA256(6, 96, Y8, Y10, Y6)
	WDROPFMA256(7, 112, Y9, Y11, Y7)
	INCQ BX
	CMPQ BX, CX
	JLT  mbf2_b8loop
mbf2_b8store:
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
	JMP  mbf2_col

mbf2_b4:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mbf2_b4zero
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	JMP  mbf2_b4start
mbf2_b4zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
mbf2_b4start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mbf2_b4store
mbf2_b4loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	PF_BITS(96)
	CUR_BITS256
	CUR_ROW
	VALUE256
	WDROPFMA256(0, 0, Y8, Y10, Y0)
	WDROPFMA256(1, 16, Y9, Y11, Y1)
	WDROPFMA256(2, 32, Y8, Y10, Y2)
	WDROPFMA256(3, 48, Y9, Y11, Y3)
	INCQ BX
	CMPQ BX, CX
	JLT  mbf2_b4loop
mbf2_b4store:
	LEAQ (R12)(R11*1), AX
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 64(AX)
	VMOVUPS Y3, 96(AX)
	ADDQ $128, R11
	JMP  mbf2_col

mbf2_b2:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mbf2_b2zero
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	JMP  mbf2_b2start
mbf2_b2zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
mbf2_b2start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mbf2_b2store
mbf2_b2loop:
	PF_ROW(192)
	PREFETCHT0 0(AX)
	PF_BITS(192)
	CUR_BITS256
	CUR_ROW
	VALUE256
	WDROPFMA256(0, 0, Y8, Y10, Y0)
	WDROPFMA256(1, 16, Y9, Y11, Y1)
	INCQ BX
	CMPQ BX, CX
	JLT  mbf2_b2loop
mbf2_b2store:
	LEAQ (R12)(R11*1), AX
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	ADDQ $64, R11
	JMP  mbf2_col

mbf2_b1:
	LEAQ (R12)(R11*1), AX
	CMPB accumulate+144(FP), $0
	JEQ  mbf2_b1zero
	VMOVUPS 0(AX), Y0
	JMP  mbf2_b1start
mbf2_b1zero:
	VXORPS Y0, Y0, Y0
mbf2_b1start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mbf2_b1store
mbf2_b1loop:
	PF_ROW(192)
	PREFETCHT0 0(AX)
	PF_BITS(192)
	CUR_BITS256
	CUR_ROW
	VALUE256
	WDROPFMA256(0, 0, Y8, Y10, Y0)
	INCQ BX
	CMPQ BX, CX
	JLT  mbf2_b1loop
mbf2_b1store:
	LEAQ (R12)(R11*1), AX
	VMOVUPS Y0, 0(AX)
	ADDQ $32, R11
	JMP  mbf2_col

// One column c: y[c] in X0, its lane bit 1<<(c%8) in X12, each gathered
// word broadcast and shifted into a float32, scaled and ANDed with its
// expanded bit.
mbf2_b0:
	MOVQ R11, AX
	SHRQ $2, AX
	ANDQ $7, AX
	LEAQ mbflanes<>(SB), BX
	VPBROADCASTD (BX)(AX*4), X12
	LEAQ (R12)(R11*1), AX
	VXORPS X0, X0, X0
	CMPB accumulate+144(FP), $0
	JEQ  mbf2_b0start
	VMOVSS (AX), X0
mbf2_b0start:
	MOVQ R13, BX
	CMPQ BX, CX
	JGE  mbf2_b0store
mbf2_b0loop:
	PF_ROW(192)
	PREFETCHT0 (AX)
	CUR_BITS256
	CUR_ROW
	VALUE256
	VPBROADCASTB 0(R9), X8
	VPAND X12, X8, X8
	VPCMPEQD X12, X8, X8
	VPBROADCASTW (AX), X10
	VPSLLD $16, X10, X10
	VMULPS X10, X14, X10
	VANDPS X8, X10, X10
	VFMADD231SS X10, X15, X0
	INCQ BX
	CMPQ BX, CX
	JLT  mbf2_b0loop
mbf2_b0store:
	LEAQ (R12)(R11*1), AX
	VMOVSS X0, (AX)
	ADDQ $4, R11
	JMP  mbf2_col

mbf2_next:
	MOVQ ldy+136(FP), AX
	LEAQ (R12)(AX*4), R12
	ADDQ $8, R8
	CMPQ R8, rowsend-16(SP)
	JLT  mbf2_row

mbf2_done:
	VZEROUPPER
	RET
