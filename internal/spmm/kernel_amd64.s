//go:build !noasm

#include "textflag.h"

// Row kernels for y = A·x (mulRows*) and the scatter y[j] += v·x[i] behind
// Aᵀ·x (scatter*). A row's width is cut into register-resident blocks of
// 8, 4, 2 and 1 vectors and a masked tail; each block walks the row's
// nonzeros once. For every nonzero the block prefetches its columns of the
// row a few nonzeros ahead (clamped to the last nonzero of the call, so the
// prefetch runs on into the next row). The distance keeps about 6 KiB of
// gathered rows in flight (12 KiB for the read-modify-write scatter), the
// best of 3-12 KiB measured on Zen 5; narrow blocks look further ahead.
//
// mulRowsFarAVX512 is mulRowsAVX512 for a gathered matrix too large for the
// caches (see farGatherBytes): its blocks of a vector or more prefetch
// into L2 (PREFETCHT2) and keep about 24 KiB in flight. A prefetch into L1
// holds one of the core's few L1 miss buffers until its line arrives, which
// caps the lines in flight from memory whatever the distance; one into L2
// is tracked by L2's larger queue. When the rows come from L3 instead, the
// near prefetch into L1 is the faster (see farGatherBytes for figures).
// Profiled on the 1M × 128 benchmark, both kernels spend most of their
// samples waiting to issue a prefetch (the core's queue of misses is full),
// next to none on the multiply-adds' loads: the gather is bound by how many
// lines a core can have in flight, and the far kernel keeps more.
//
// Registers shared by all kernels:
//	R8  &offsets[r]          R9  &offsets[rows]      R14 last nonzero position
//	SI  indices              DX  values (0 if nil)   BX  nonzero position p
//	CX  end of row r         R13 start of row r      R11 column offset in bytes
//	R10 stride of the gathered (or scattered) matrix in bytes
//	R15 gathered matrix + column offset              R12 current dense row
//	AX  scratch

// PF_ROW points AX at the block of the row dist nonzeros ahead.
#define PF_ROW(dist) \
	LEAQ dist(BX), AX \
	CMPQ AX, R14 \
	CMOVQGT R14, AX \
	MOVLQSX (SI)(AX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

// CUR_ROW points AX at the block of the row of nonzero BX.
#define CUR_ROW \
	MOVLQSX (SI)(BX*4), AX \
	IMULQ R10, AX \
	ADDQ R15, AX

// VALUE512 and VALUE256 broadcast values[BX] into Z31 / Y15, which hold 1
// when values is nil.
#define VALUE512 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Z31

#define VALUE256 \
	TESTQ DX, DX \
	JZ 2(PC) \
	VBROADCASTSS (DX)(BX*4), Y15

// tailmask<>+32-4r holds r all-ones lanes followed by zero lanes (AVX2 tails).
DATA tailmask<>+0(SB)/8, $0xffffffffffffffff
DATA tailmask<>+8(SB)/8, $0xffffffffffffffff
DATA tailmask<>+16(SB)/8, $0xffffffffffffffff
DATA tailmask<>+24(SB)/8, $0xffffffffffffffff
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64


// MULROWS512 is the AVX-512 row kernel; its blocks of 8, 4, 2 and 1
// vectors prefetch with hint Hn, Dn nonzeros ahead (the masked block, under
// a line a row, into L1 96 ahead: it was no faster with PREFETCHT2).
#define MULROWS512(H8, D8, H4, D4, H2, D2, H1, D1, ST, FENCE) \
	MOVQ offsets_base+0(FP), R8 \
	MOVQ offsets_len+8(FP), R9 \
	DECQ R9 \
	JLE  mulavx512_done \
	LEAQ (R8)(R9*8), R9 \
	MOVQ (R9), R14 \
	DECQ R14 \
	MOVQ indices_base+24(FP), SI \
	MOVQ values_base+48(FP), DX \
	MOVQ x_base+72(FP), DI \
	MOVQ ldx+96(FP), R10 \
	MOVQ y_base+112(FP), R12 \
	SHLQ $2, R10 \
	MOVL $0x3f800000, AX \
	VPBROADCASTD AX, Z31 \
mulavx512_row: \
	MOVQ (R8), R13 \
	MOVQ 8(R8), CX \
	XORQ R11, R11 \
mulavx512_col: \
	MOVQ width+104(FP), AX \
	SHLQ $2, AX \
	SUBQ R11, AX \
	JLE  mulavx512_next \
	LEAQ (DI)(R11*1), R15 \
	CMPQ AX, $512 \
	JGE  mulavx512_b8 \
	CMPQ AX, $256 \
	JGE  mulavx512_b4 \
	CMPQ AX, $128 \
	JGE  mulavx512_b2 \
	CMPQ AX, $64 \
	JGE  mulavx512_b1 \
	JMP  mulavx512_bm \
mulavx512_b8: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx512_b8zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	VMOVUPS 256(AX), Z4 \
	VMOVUPS 320(AX), Z5 \
	VMOVUPS 384(AX), Z6 \
	VMOVUPS 448(AX), Z7 \
	JMP  mulavx512_b8start \
mulavx512_b8zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
mulavx512_b8start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx512_b8store \
mulavx512_b8loop: \
	PF_ROW(D8) \
	H8 0(AX) \
	H8 64(AX) \
	H8 128(AX) \
	H8 192(AX) \
	H8 256(AX) \
	H8 320(AX) \
	H8 384(AX) \
	H8 448(AX) \
	CUR_ROW \
	VALUE512 \
	VFMADD231PS 0(AX), Z31, Z0 \
	VFMADD231PS 64(AX), Z31, Z1 \
	VFMADD231PS 128(AX), Z31, Z2 \
	VFMADD231PS 192(AX), Z31, Z3 \
	VFMADD231PS 256(AX), Z31, Z4 \
	VFMADD231PS 320(AX), Z31, Z5 \
	VFMADD231PS 384(AX), Z31, Z6 \
	VFMADD231PS 448(AX), Z31, Z7 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx512_b8loop \
mulavx512_b8store: \
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
	JMP  mulavx512_col \
mulavx512_b4: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx512_b4zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	JMP  mulavx512_b4start \
mulavx512_b4zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
mulavx512_b4start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx512_b4store \
mulavx512_b4loop: \
	PF_ROW(D4) \
	H4 0(AX) \
	H4 64(AX) \
	H4 128(AX) \
	H4 192(AX) \
	CUR_ROW \
	VALUE512 \
	VFMADD231PS 0(AX), Z31, Z0 \
	VFMADD231PS 64(AX), Z31, Z1 \
	VFMADD231PS 128(AX), Z31, Z2 \
	VFMADD231PS 192(AX), Z31, Z3 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx512_b4loop \
mulavx512_b4store: \
	LEAQ (R12)(R11*1), AX \
	ST Z0, 0(AX) \
	ST Z1, 64(AX) \
	ST Z2, 128(AX) \
	ST Z3, 192(AX) \
	ADDQ $256, R11 \
	JMP  mulavx512_col \
mulavx512_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx512_b2zero \
	VMOVUPS 0(AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	JMP  mulavx512_b2start \
mulavx512_b2zero: \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
mulavx512_b2start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx512_b2store \
mulavx512_b2loop: \
	PF_ROW(D2) \
	H2 0(AX) \
	H2 64(AX) \
	CUR_ROW \
	VALUE512 \
	VFMADD231PS 0(AX), Z31, Z0 \
	VFMADD231PS 64(AX), Z31, Z1 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx512_b2loop \
mulavx512_b2store: \
	LEAQ (R12)(R11*1), AX \
	ST Z0, 0(AX) \
	ST Z1, 64(AX) \
	ADDQ $128, R11 \
	JMP  mulavx512_col \
mulavx512_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx512_b1zero \
	VMOVUPS 0(AX), Z0 \
	JMP  mulavx512_b1start \
mulavx512_b1zero: \
	VPXORD Z0, Z0, Z0 \
mulavx512_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx512_b1store \
mulavx512_b1loop: \
	PF_ROW(D1) \
	H1 0(AX) \
	CUR_ROW \
	VALUE512 \
	VFMADD231PS 0(AX), Z31, Z0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx512_b1loop \
mulavx512_b1store: \
	LEAQ (R12)(R11*1), AX \
	ST Z0, 0(AX) \
	ADDQ $64, R11 \
	JMP  mulavx512_col \
mulavx512_bm: \
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
	JEQ  mulavx512_bmzero \
	VMOVUPS.Z (AX), K1, Z0 \
	JMP  mulavx512_bmstart \
mulavx512_bmzero: \
	VPXORD Z0, Z0, Z0 \
mulavx512_bmstart: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx512_bmstore \
mulavx512_bmloop: \
	PF_ROW(96) \
	PREFETCHT0 (AX) \
	CUR_ROW \
	VALUE512 \
	VFMADD231PS (AX), Z31, K1, Z0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx512_bmloop \
mulavx512_bmstore: \
	LEAQ (R12)(R11*1), AX \
	VMOVUPS Z0, K1, (AX) \
mulavx512_next: \
	MOVQ ldy+136(FP), AX \
	LEAQ (R12)(AX*4), R12 \
	ADDQ $8, R8 \
	CMPQ R8, R9 \
	JLT  mulavx512_row \
mulavx512_done: \
	FENCE \
	VZEROUPPER \
	RET

// MULROWS256 is the AVX2 row kernel, storing y's vectors with ST; its
// blocks of 8, 4, 2 and 1 vectors prefetch into L1 24, 48, 96 and 96
// nonzeros ahead. On an AMD EPYC (Zen 3), one core gathering from 488 MiB
// of rows ran as fast prefetching 12 nonzeros ahead or 48, into L2 or
// with PREFETCHNTA, or one line of a block's four (within 3%): no far
// kernel pays there.
#define MULROWS256(ST, FENCE) \
	MOVQ offsets_base+0(FP), R8 \
	MOVQ offsets_len+8(FP), R9 \
	DECQ R9 \
	JLE  mulavx2_done \
	LEAQ (R8)(R9*8), R9 \
	MOVQ (R9), R14 \
	DECQ R14 \
	MOVQ indices_base+24(FP), SI \
	MOVQ values_base+48(FP), DX \
	MOVQ x_base+72(FP), DI \
	MOVQ ldx+96(FP), R10 \
	MOVQ y_base+112(FP), R12 \
	SHLQ $2, R10 \
	MOVL $0x3f800000, AX \
	VMOVD AX, X15 \
	VBROADCASTSS X15, Y15 \
mulavx2_row: \
	MOVQ (R8), R13 \
	MOVQ 8(R8), CX \
	XORQ R11, R11 \
mulavx2_col: \
	MOVQ width+104(FP), AX \
	SHLQ $2, AX \
	SUBQ R11, AX \
	JLE  mulavx2_next \
	LEAQ (DI)(R11*1), R15 \
	CMPQ AX, $256 \
	JGE  mulavx2_b8 \
	CMPQ AX, $128 \
	JGE  mulavx2_b4 \
	CMPQ AX, $64 \
	JGE  mulavx2_b2 \
	CMPQ AX, $32 \
	JGE  mulavx2_b1 \
	JMP  mulavx2_bm \
mulavx2_b8: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx2_b8zero \
	VMOVUPS 0(AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	VMOVUPS 64(AX), Y2 \
	VMOVUPS 96(AX), Y3 \
	VMOVUPS 128(AX), Y4 \
	VMOVUPS 160(AX), Y5 \
	VMOVUPS 192(AX), Y6 \
	VMOVUPS 224(AX), Y7 \
	JMP  mulavx2_b8start \
mulavx2_b8zero: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
mulavx2_b8start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx2_b8store \
mulavx2_b8loop: \
	PF_ROW(24) \
	PREFETCHT0 0(AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	CUR_ROW \
	VALUE256 \
	VFMADD231PS 0(AX), Y15, Y0 \
	VFMADD231PS 32(AX), Y15, Y1 \
	VFMADD231PS 64(AX), Y15, Y2 \
	VFMADD231PS 96(AX), Y15, Y3 \
	VFMADD231PS 128(AX), Y15, Y4 \
	VFMADD231PS 160(AX), Y15, Y5 \
	VFMADD231PS 192(AX), Y15, Y6 \
	VFMADD231PS 224(AX), Y15, Y7 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx2_b8loop \
mulavx2_b8store: \
	LEAQ (R12)(R11*1), AX \
	ST Y0, 0(AX) \
	ST Y1, 32(AX) \
	ST Y2, 64(AX) \
	ST Y3, 96(AX) \
	ST Y4, 128(AX) \
	ST Y5, 160(AX) \
	ST Y6, 192(AX) \
	ST Y7, 224(AX) \
	ADDQ $256, R11 \
	JMP  mulavx2_col \
mulavx2_b4: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx2_b4zero \
	VMOVUPS 0(AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	VMOVUPS 64(AX), Y2 \
	VMOVUPS 96(AX), Y3 \
	JMP  mulavx2_b4start \
mulavx2_b4zero: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
mulavx2_b4start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx2_b4store \
mulavx2_b4loop: \
	PF_ROW(48) \
	PREFETCHT0 0(AX) \
	PREFETCHT0 64(AX) \
	CUR_ROW \
	VALUE256 \
	VFMADD231PS 0(AX), Y15, Y0 \
	VFMADD231PS 32(AX), Y15, Y1 \
	VFMADD231PS 64(AX), Y15, Y2 \
	VFMADD231PS 96(AX), Y15, Y3 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx2_b4loop \
mulavx2_b4store: \
	LEAQ (R12)(R11*1), AX \
	ST Y0, 0(AX) \
	ST Y1, 32(AX) \
	ST Y2, 64(AX) \
	ST Y3, 96(AX) \
	ADDQ $128, R11 \
	JMP  mulavx2_col \
mulavx2_b2: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx2_b2zero \
	VMOVUPS 0(AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	JMP  mulavx2_b2start \
mulavx2_b2zero: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
mulavx2_b2start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx2_b2store \
mulavx2_b2loop: \
	PF_ROW(96) \
	PREFETCHT0 0(AX) \
	CUR_ROW \
	VALUE256 \
	VFMADD231PS 0(AX), Y15, Y0 \
	VFMADD231PS 32(AX), Y15, Y1 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx2_b2loop \
mulavx2_b2store: \
	LEAQ (R12)(R11*1), AX \
	ST Y0, 0(AX) \
	ST Y1, 32(AX) \
	ADDQ $64, R11 \
	JMP  mulavx2_col \
mulavx2_b1: \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx2_b1zero \
	VMOVUPS 0(AX), Y0 \
	JMP  mulavx2_b1start \
mulavx2_b1zero: \
	VXORPS Y0, Y0, Y0 \
mulavx2_b1start: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx2_b1store \
mulavx2_b1loop: \
	PF_ROW(96) \
	PREFETCHT0 0(AX) \
	CUR_ROW \
	VALUE256 \
	VFMADD231PS 0(AX), Y15, Y0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx2_b1loop \
mulavx2_b1store: \
	LEAQ (R12)(R11*1), AX \
	ST Y0, 0(AX) \
	ADDQ $32, R11 \
	JMP  mulavx2_col \
mulavx2_bm: \
	LEAQ tailmask<>+32(SB), BX \
	SUBQ AX, BX \
	VMOVDQU (BX), Y14 \
	LEAQ (R12)(R11*1), AX \
	CMPB accumulate+144(FP), $0 \
	JEQ  mulavx2_bmzero \
	VMASKMOVPS (AX), Y14, Y0 \
	JMP  mulavx2_bmstart \
mulavx2_bmzero: \
	VXORPS Y0, Y0, Y0 \
mulavx2_bmstart: \
	MOVQ R13, BX \
	CMPQ BX, CX \
	JGE  mulavx2_bmstore \
mulavx2_bmloop: \
	PF_ROW(96) \
	PREFETCHT0 (AX) \
	CUR_ROW \
	VALUE256 \
	VMASKMOVPS (AX), Y14, Y8 \
	VFMADD231PS Y8, Y15, Y0 \
	INCQ BX \
	CMPQ BX, CX \
	JLT  mulavx2_bmloop \
mulavx2_bmstore: \
	LEAQ (R12)(R11*1), AX \
	VMASKMOVPS Y0, Y14, (AX) \
mulavx2_next: \
	MOVQ ldy+136(FP), AX \
	LEAQ (R12)(AX*4), R12 \
	ADDQ $8, R8 \
	CMPQ R8, R9 \
	JLT  mulavx2_row \
mulavx2_done: \
	FENCE \
	VZEROUPPER \
	RET

// func mulRowsAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsAVX512(SB), NOSPLIT, $0-145
	MULROWS512(PREFETCHT0, 12, PREFETCHT0, 24, PREFETCHT0, 48, PREFETCHT0, 96, VMOVUPS, NOP)

// func mulRowsStreamAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsStreamAVX512(SB), NOSPLIT, $0-145
	MULROWS512(PREFETCHT0, 12, PREFETCHT0, 24, PREFETCHT0, 48, PREFETCHT0, 96, VMOVNTPS, SFENCE)

// func mulRowsFarAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsFarAVX512(SB), NOSPLIT, $0-145
	MULROWS512(PREFETCHT2, 48, PREFETCHT2, 96, PREFETCHT2, 192, PREFETCHT2, 384, VMOVUPS, NOP)

// func mulRowsFarStreamAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsFarStreamAVX512(SB), NOSPLIT, $0-145
	MULROWS512(PREFETCHT2, 48, PREFETCHT2, 96, PREFETCHT2, 192, PREFETCHT2, 384, VMOVNTPS, SFENCE)

// func scatterAVX512(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)
TEXT ·scatterAVX512(SB), NOSPLIT, $0-144
	MOVQ offsets_base+0(FP), R8
	MOVQ offsets_len+8(FP), R9
	DECQ R9
	JLE  scatteravx512_done
	LEAQ (R8)(R9*8), R9
	MOVQ (R9), R14
	DECQ R14
	MOVQ indices_base+24(FP), SI
	MOVQ values_base+48(FP), DX
	MOVQ y_base+112(FP), DI
	MOVQ ldy+136(FP), R10
	MOVQ x_base+72(FP), R12
	SHLQ $2, R10
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z31

scatteravx512_row:
	MOVQ (R8), R13
	MOVQ 8(R8), CX
	CMPQ R13, CX
	JGE  scatteravx512_next
	XORQ R11, R11

scatteravx512_col:
	MOVQ width+104(FP), AX
	SHLQ $2, AX
	SUBQ R11, AX
	JLE  scatteravx512_next
	LEAQ (DI)(R11*1), R15
	CMPQ AX, $512
	JGE  scatteravx512_b8
	CMPQ AX, $256
	JGE  scatteravx512_b4
	CMPQ AX, $128
	JGE  scatteravx512_b2
	CMPQ AX, $64
	JGE  scatteravx512_b1
	JMP  scatteravx512_bm

scatteravx512_b8:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS 128(AX), Z2
	VMOVUPS 192(AX), Z3
	VMOVUPS 256(AX), Z4
	VMOVUPS 320(AX), Z5
	VMOVUPS 384(AX), Z6
	VMOVUPS 448(AX), Z7
	MOVQ R13, BX
scatteravx512_b8loop:
	PF_ROW(24)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	PREFETCHT0 448(AX)
	CUR_ROW
	VALUE512
	VMOVUPS 0(AX), Z8
	VFMADD231PS Z31, Z0, Z8
	VMOVUPS Z8, 0(AX)
	VMOVUPS 64(AX), Z9
	VFMADD231PS Z31, Z1, Z9
	VMOVUPS Z9, 64(AX)
	VMOVUPS 128(AX), Z10
	VFMADD231PS Z31, Z2, Z10
	VMOVUPS Z10, 128(AX)
	VMOVUPS 192(AX), Z11
	VFMADD231PS Z31, Z3, Z11
	VMOVUPS Z11, 192(AX)
	VMOVUPS 256(AX), Z12
	VFMADD231PS Z31, Z4, Z12
	VMOVUPS Z12, 256(AX)
	VMOVUPS 320(AX), Z13
	VFMADD231PS Z31, Z5, Z13
	VMOVUPS Z13, 320(AX)
	VMOVUPS 384(AX), Z14
	VFMADD231PS Z31, Z6, Z14
	VMOVUPS Z14, 384(AX)
	VMOVUPS 448(AX), Z15
	VFMADD231PS Z31, Z7, Z15
	VMOVUPS Z15, 448(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx512_b8loop
	ADDQ $512, R11
	JMP  scatteravx512_col

scatteravx512_b4:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS 128(AX), Z2
	VMOVUPS 192(AX), Z3
	MOVQ R13, BX
scatteravx512_b4loop:
	PF_ROW(48)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	CUR_ROW
	VALUE512
	VMOVUPS 0(AX), Z8
	VFMADD231PS Z31, Z0, Z8
	VMOVUPS Z8, 0(AX)
	VMOVUPS 64(AX), Z9
	VFMADD231PS Z31, Z1, Z9
	VMOVUPS Z9, 64(AX)
	VMOVUPS 128(AX), Z10
	VFMADD231PS Z31, Z2, Z10
	VMOVUPS Z10, 128(AX)
	VMOVUPS 192(AX), Z11
	VFMADD231PS Z31, Z3, Z11
	VMOVUPS Z11, 192(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx512_b4loop
	ADDQ $256, R11
	JMP  scatteravx512_col

scatteravx512_b2:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	MOVQ R13, BX
scatteravx512_b2loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	CUR_ROW
	VALUE512
	VMOVUPS 0(AX), Z8
	VFMADD231PS Z31, Z0, Z8
	VMOVUPS Z8, 0(AX)
	VMOVUPS 64(AX), Z9
	VFMADD231PS Z31, Z1, Z9
	VMOVUPS Z9, 64(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx512_b2loop
	ADDQ $128, R11
	JMP  scatteravx512_col

scatteravx512_b1:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Z0
	MOVQ R13, BX
scatteravx512_b1loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	CUR_ROW
	VALUE512
	VMOVUPS 0(AX), Z8
	VFMADD231PS Z31, Z0, Z8
	VMOVUPS Z8, 0(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx512_b1loop
	ADDQ $64, R11
	JMP  scatteravx512_col

scatteravx512_bm:
	SHRQ $2, AX
	MOVQ CX, BX
	MOVQ AX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	MOVQ BX, CX
	LEAQ (R12)(R11*1), AX
	VMOVUPS.Z (AX), K1, Z0
	MOVQ R13, BX
scatteravx512_bmloop:
	PF_ROW(96)
	PREFETCHT0 (AX)
	CUR_ROW
	VALUE512
	VMOVUPS.Z (AX), K1, Z8
	VFMADD231PS Z31, Z0, Z8
	VMOVUPS Z8, K1, (AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx512_bmloop

scatteravx512_next:
	MOVQ ldx+96(FP), AX
	LEAQ (R12)(AX*4), R12
	ADDQ $8, R8
	CMPQ R8, R9
	JLT  scatteravx512_row

scatteravx512_done:
	VZEROUPPER
	RET

// func mulRowsAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsAVX2(SB), NOSPLIT, $0-145
	MULROWS256(VMOVUPS, NOP)

// func mulRowsStreamAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int, accumulate bool)
TEXT ·mulRowsStreamAVX2(SB), NOSPLIT, $0-145
	MULROWS256(VMOVNTPS, SFENCE)

// func scatterAVX2(offsets []int64, indices []int32, values []float32, x []float32, ldx, width int, y []float32, ldy int)
TEXT ·scatterAVX2(SB), NOSPLIT, $0-144
	MOVQ offsets_base+0(FP), R8
	MOVQ offsets_len+8(FP), R9
	DECQ R9
	JLE  scatteravx2_done
	LEAQ (R8)(R9*8), R9
	MOVQ (R9), R14
	DECQ R14
	MOVQ indices_base+24(FP), SI
	MOVQ values_base+48(FP), DX
	MOVQ y_base+112(FP), DI
	MOVQ ldy+136(FP), R10
	MOVQ x_base+72(FP), R12
	SHLQ $2, R10
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	VBROADCASTSS X15, Y15

scatteravx2_row:
	MOVQ (R8), R13
	MOVQ 8(R8), CX
	CMPQ R13, CX
	JGE  scatteravx2_next
	XORQ R11, R11

scatteravx2_col:
	MOVQ width+104(FP), AX
	SHLQ $2, AX
	SUBQ R11, AX
	JLE  scatteravx2_next
	LEAQ (DI)(R11*1), R15
	CMPQ AX, $256
	JGE  scatteravx2_b8
	CMPQ AX, $128
	JGE  scatteravx2_b4
	CMPQ AX, $64
	JGE  scatteravx2_b2
	CMPQ AX, $32
	JGE  scatteravx2_b1
	JMP  scatteravx2_bm

scatteravx2_b8:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	VMOVUPS 128(AX), Y4
	VMOVUPS 160(AX), Y5
	VMOVUPS 192(AX), Y6
	VMOVUPS 224(AX), Y7
	MOVQ R13, BX
scatteravx2_b8loop:
	PF_ROW(48)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	CUR_ROW
	VALUE256
	VMOVUPS 0(AX), Y8
	VFMADD231PS Y15, Y0, Y8
	VMOVUPS Y8, 0(AX)
	VMOVUPS 32(AX), Y9
	VFMADD231PS Y15, Y1, Y9
	VMOVUPS Y9, 32(AX)
	VMOVUPS 64(AX), Y10
	VFMADD231PS Y15, Y2, Y10
	VMOVUPS Y10, 64(AX)
	VMOVUPS 96(AX), Y11
	VFMADD231PS Y15, Y3, Y11
	VMOVUPS Y11, 96(AX)
	VMOVUPS 128(AX), Y8
	VFMADD231PS Y15, Y4, Y8
	VMOVUPS Y8, 128(AX)
	VMOVUPS 160(AX), Y9
	VFMADD231PS Y15, Y5, Y9
	VMOVUPS Y9, 160(AX)
	VMOVUPS 192(AX), Y10
	VFMADD231PS Y15, Y6, Y10
	VMOVUPS Y10, 192(AX)
	VMOVUPS 224(AX), Y11
	VFMADD231PS Y15, Y7, Y11
	VMOVUPS Y11, 224(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx2_b8loop
	ADDQ $256, R11
	JMP  scatteravx2_col

scatteravx2_b4:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	MOVQ R13, BX
scatteravx2_b4loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	CUR_ROW
	VALUE256
	VMOVUPS 0(AX), Y8
	VFMADD231PS Y15, Y0, Y8
	VMOVUPS Y8, 0(AX)
	VMOVUPS 32(AX), Y9
	VFMADD231PS Y15, Y1, Y9
	VMOVUPS Y9, 32(AX)
	VMOVUPS 64(AX), Y10
	VFMADD231PS Y15, Y2, Y10
	VMOVUPS Y10, 64(AX)
	VMOVUPS 96(AX), Y11
	VFMADD231PS Y15, Y3, Y11
	VMOVUPS Y11, 96(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx2_b4loop
	ADDQ $128, R11
	JMP  scatteravx2_col

scatteravx2_b2:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	MOVQ R13, BX
scatteravx2_b2loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	CUR_ROW
	VALUE256
	VMOVUPS 0(AX), Y8
	VFMADD231PS Y15, Y0, Y8
	VMOVUPS Y8, 0(AX)
	VMOVUPS 32(AX), Y9
	VFMADD231PS Y15, Y1, Y9
	VMOVUPS Y9, 32(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx2_b2loop
	ADDQ $64, R11
	JMP  scatteravx2_col

scatteravx2_b1:
	LEAQ (R12)(R11*1), AX
	VMOVUPS 0(AX), Y0
	MOVQ R13, BX
scatteravx2_b1loop:
	PF_ROW(96)
	PREFETCHT0 0(AX)
	CUR_ROW
	VALUE256
	VMOVUPS 0(AX), Y8
	VFMADD231PS Y15, Y0, Y8
	VMOVUPS Y8, 0(AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx2_b1loop
	ADDQ $32, R11
	JMP  scatteravx2_col

scatteravx2_bm:
	LEAQ tailmask<>+32(SB), BX
	SUBQ AX, BX
	VMOVDQU (BX), Y14
	LEAQ (R12)(R11*1), AX
	VMASKMOVPS (AX), Y14, Y0
	MOVQ R13, BX
scatteravx2_bmloop:
	PF_ROW(96)
	PREFETCHT0 (AX)
	CUR_ROW
	VALUE256
	VMASKMOVPS (AX), Y14, Y8
	VFMADD231PS Y15, Y0, Y8
	VMASKMOVPS Y8, Y14, (AX)
	INCQ BX
	CMPQ BX, CX
	JLT  scatteravx2_bmloop

scatteravx2_next:
	MOVQ ldx+96(FP), AX
	LEAQ (R12)(AX*4), R12
	ADDQ $8, R8
	CMPQ R8, R9
	JLT  scatteravx2_row

scatteravx2_done:
	VZEROUPPER
	RET
