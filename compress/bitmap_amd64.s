//go:build !noasm

#include "textflag.h"

// func packRowsAVX512(out *byte, outStride int, bits *uint32, rows, n int, bitmaps *byte, bitmapStride, k int) int
//
// packRowsGo: a row's bitmap is checked first (k columns, none past n), so
// that the stores never run past the row's k values; then 16 columns a
// step, load the kept lanes, compress them together, store as many as
// were kept. A row's cursors advance by popcounts of the bitmap read into
// a general register, so no step waits on the one before it.
//
// Both kernels prefetch their streams a few rows ahead: a halo message
// does not fit in cache, and without it they ran at half the speed of a
// plain copy of the same bytes out of cache (3.5x slower encoding and
// 2x slower decoding 124k rows of 256, BenchmarkCodecsOutOfCache). The
// message side, packed values written or read, runs 4 KiB ahead: against
// 1 KiB, unpacking top-k's gradient messages into rows in cache went from
// 54 to 40 ns a row at r = 1.1 and from 37 to 26–31 at r = 2, packing
// from 34 to 31 and from 30 to 28 (BenchmarkTopKGradOutOfCache).
TEXT ·packRowsAVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ outStride+8(FP), R10
	MOVQ bits+16(FP), SI
	MOVQ rows+24(FP), R12
	MOVQ n+32(FP), R13
	MOVQ bitmaps+40(FP), BX
	MOVQ bitmapStride+48(FP), R11
	MOVQ $-1, R8

pk_row:
	// Count the bitmap's columns into DX.
	MOVQ BX, R9
	MOVQ R13, CX
	XORL DX, DX

pk_count:
	CMPQ    CX, $16
	JLT     pk_count_tail
	MOVWLZX 0(R9), R14
	POPCNTL R14, R14
	ADDQ    R14, DX
	ADDQ    $2, R9
	SUBQ    $16, CX
	JMP     pk_count

pk_count_tail:
	TESTQ   CX, CX
	JEQ     pk_check
	MOVBLZX 0(R9), R14
	CMPQ    CX, $8
	JLE     pk_count_last
	MOVWLZX 0(R9), R14

pk_count_last:
	SHRXQ   CX, R14, R15
	TESTQ   R15, R15
	JNE     pk_bad // a column past n
	POPCNTL R14, R14
	ADDQ    R14, DX

pk_check:
	CMPQ DX, k+56(FP)
	JNE  pk_bad

	MOVQ DI, AX  // out cursor
	MOVQ SI, DX  // values cursor
	MOVQ BX, R9  // bitmap cursor
	MOVQ R13, CX // columns left

pk_block:
	CMPQ        CX, $16
	JLT         pk_tail
	MOVWLZX     0(R9), R14
	KMOVW       R14, K1
	POPCNTL     R14, R14
	BZHIQ       R14, R8, R15
	KMOVW       R15, K2
	PREFETCHT0  2048(DX)
	PREFETCHT0  4096(AX)
	VMOVDQU32.Z 0(DX), K1, Z0
	VPCOMPRESSD Z0, K1, Z1
	VMOVDQU32   Z1, K2, 0(AX)
	LEAQ        (AX)(R14*4), AX
	ADDQ        $64, DX
	ADDQ        $2, R9
	SUBQ        $16, CX
	JMP         pk_block

pk_tail:
	TESTQ   CX, CX
	JEQ     pk_next
	MOVBLZX 0(R9), R14 // one byte of bitmap if the tail has up to 8 columns
	CMPQ    CX, $8
	JLE     pk_tail_mask
	MOVWLZX 0(R9), R14

pk_tail_mask:
	KMOVW       R14, K1
	POPCNTL     R14, R14
	BZHIQ       R14, R8, R15
	KMOVW       R15, K2
	VMOVDQU32.Z 0(DX), K1, Z0
	VPCOMPRESSD Z0, K1, Z1
	VMOVDQU32   Z1, K2, 0(AX)

pk_next:
	ADDQ R10, DI
	LEAQ (SI)(R13*4), SI
	ADDQ R11, BX
	DECQ R12
	JNZ  pk_row
	MOVQ $-1, ret+64(FP)
	VZEROUPPER
	RET

pk_bad:
	MOVQ rows+24(FP), AX
	SUBQ R12, AX
	MOVQ AX, ret+64(FP)
	VZEROUPPER
	RET

// func unpackRowsAVX512(out *float32, bitmaps *byte, bitmapStride int, vals *byte, valStride int, rows, n, k int, scale float32) int
//
// unpackRowsGo: a row's bitmap is checked first (k columns, none past n),
// so that the loads never run past its values; then 16 columns a step,
// load as many values as the step keeps, scale them, expand them to their
// lanes (zero elsewhere) and store.
TEXT ·unpackRowsAVX512(SB), NOSPLIT, $0-80
	MOVQ         out+0(FP), DI
	MOVQ         bitmaps+8(FP), BX
	MOVQ         bitmapStride+16(FP), R10
	MOVQ         vals+24(FP), SI
	MOVQ         valStride+32(FP), R11
	MOVQ         rows+40(FP), R12
	MOVQ         n+48(FP), R13
	VBROADCASTSS scale+64(FP), Z2
	MOVQ         $-1, R8

up_row:
	// Count the bitmap's columns into DX.
	MOVQ BX, R9
	MOVQ R13, CX
	XORL DX, DX

up_count:
	CMPQ    CX, $16
	JLT     up_count_tail
	MOVWLZX 0(R9), R14
	POPCNTL R14, R14
	ADDQ    R14, DX
	ADDQ    $2, R9
	SUBQ    $16, CX
	JMP     up_count

up_count_tail:
	TESTQ   CX, CX
	JEQ     up_check
	MOVBLZX 0(R9), R14
	CMPQ    CX, $8
	JLE     up_count_last
	MOVWLZX 0(R9), R14

up_count_last:
	SHRXQ   CX, R14, R15
	TESTQ   R15, R15
	JNE     up_bad // a column past n
	POPCNTL R14, R14
	ADDQ    R14, DX

up_check:
	CMPQ DX, k+56(FP)
	JNE  up_bad

	MOVQ BX, R9  // bitmap cursor
	MOVQ SI, AX  // values cursor
	MOVQ R13, CX // columns left; DI runs on through the rows

up_block:
	CMPQ        CX, $16
	JLT         up_tail
	MOVWLZX     0(R9), R14
	KMOVW       R14, K1
	POPCNTL     R14, R14
	BZHIQ       R14, R8, R15
	KMOVW       R15, K2
	PREFETCHT0  2048(DI)
	PREFETCHT0  4096(AX)
	VMOVDQU32.Z 0(AX), K2, Z0
	VMULPS      Z2, Z0, Z0 // the values only: the other columns are +0 whatever the scale
	VPEXPANDD.Z Z0, K1, Z1
	VMOVDQU32   Z1, 0(DI)
	LEAQ        (AX)(R14*4), AX
	ADDQ        $64, DI
	ADDQ        $2, R9
	SUBQ        $16, CX
	JMP         up_block

up_tail:
	TESTQ   CX, CX
	JEQ     up_next
	MOVBLZX 0(R9), R14
	CMPQ    CX, $8
	JLE     up_tail_mask
	MOVWLZX 0(R9), R14

up_tail_mask:
	KMOVW       R14, K1
	POPCNTL     R14, R14
	BZHIQ       R14, R8, R15
	KMOVW       R15, K2
	VMOVDQU32.Z 0(AX), K2, Z0
	VMULPS      Z2, Z0, Z0
	VPEXPANDD.Z Z0, K1, Z1
	BZHIQ       CX, R8, R15
	KMOVW       R15, K3
	VMOVDQU32   Z1, K3, 0(DI)
	LEAQ        (DI)(CX*4), DI

up_next:
	ADDQ R10, BX
	ADDQ R11, SI
	DECQ R12
	JNZ  up_row
	MOVQ $-1, ret+72(FP)
	VZEROUPPER
	RET

up_bad:
	MOVQ rows+40(FP), AX
	SUBQ R12, AX
	MOVQ AX, ret+72(FP)
	VZEROUPPER
	RET
