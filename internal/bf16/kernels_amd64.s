//go:build !noasm

#include "textflag.h"

// func encodeAVX512(dst *uint16, src *float32, n int)
//
// 16 values a step, as FromFloat32: b + 0x7fff + bit 16 of b, keep the top
// half; NaNs (|b| above +Inf's pattern) keep their top half with the quiet
// bit set.
TEXT ·encodeAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $1, AX
	VPBROADCASTD AX, Z15
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z14
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z13
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z12
	MOVL $0x40, AX
	VPBROADCASTD AX, Z11

enc_loop:
	VMOVDQU32 (SI), Z0
	VPSRLD    $16, Z0, Z1
	VPANDD    Z15, Z1, Z2
	VPADDD    Z14, Z2, Z2
	VPADDD    Z0, Z2, Z2
	VPSRLD    $16, Z2, Z2
	VPANDD    Z13, Z0, Z3
	VPCMPUD   $6, Z12, Z3, K1
	VPORD     Z11, Z1, Z1
	VMOVDQU32 Z1, K1, Z2
	VPMOVDW   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNE       enc_loop
	VZEROUPPER
	RET

// func decodeAVX512(dst *float32, src *uint16, n int)
TEXT ·decodeAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

dec_loop:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JNE       dec_loop
	VZEROUPPER
	RET

// func prefetchLines(p *uint16, bytes int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ bytes+8(FP), CX
	LEAQ (SI)(CX*1), CX
	ANDQ $-64, SI // whole lines, so the last one is not missed

pf_loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLT  pf_loop
	RET

// func encodeAVX2(dst *uint16, src *float32, n int)
//
// encodeAVX512 on AVX2, 16 values a step in two halves: the NaN lanes
// (|b| above +Inf's pattern, a signed compare, both sides non-negative)
// take b>>16 | 0x40 by a blend, and VPACKUSDW packs the two halves'
// 32-bit results, all at most 0xffff, to 16 bits within 128-bit lanes,
// which VPERMQ puts back in order.
TEXT ·encodeAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $1, AX
	VMOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x7fff, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x7fffffff, AX
	VMOVQ AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x7f800000, AX
	VMOVQ AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x40, AX
	VMOVQ AX, X11
	VPBROADCASTD X11, Y11

enc2_loop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y4
	VPSRLD  $16, Y0, Y1
	VPSRLD  $16, Y4, Y5
	VPAND   Y15, Y1, Y2
	VPAND   Y15, Y5, Y6
	VPADDD  Y14, Y2, Y2
	VPADDD  Y14, Y6, Y6
	VPADDD  Y0, Y2, Y2
	VPADDD  Y4, Y6, Y6
	VPSRLD  $16, Y2, Y2
	VPSRLD  $16, Y6, Y6
	VPAND   Y13, Y0, Y3
	VPAND   Y13, Y4, Y7
	VPCMPGTD Y12, Y3, Y3
	VPCMPGTD Y12, Y7, Y7
	VPOR    Y11, Y1, Y1
	VPOR    Y11, Y5, Y5
	VPBLENDVB Y3, Y1, Y2, Y2
	VPBLENDVB Y7, Y5, Y6, Y6
	VPACKUSDW Y6, Y2, Y2
	VPERMQ  $0xd8, Y2, Y2
	VMOVDQU Y2, (DI)
	ADDQ    $64, SI
	ADDQ    $32, DI
	SUBQ    $16, CX
	JNE     enc2_loop
	VZEROUPPER
	RET

// func decodeAVX2(dst *float32, src *uint16, n int)
TEXT ·decodeAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

dec2_loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JNE       dec2_loop
	VZEROUPPER
	RET

// func decodeRowsAVX2(dst *float32, ldd int, src *uint16, lds, rows, cols int)
//
// decodeAVX2 on each of rows rows (rows ≥ 1), cols a multiple of 8 (≥ 8)
// a row: 16 columns a step, then 8.
TEXT ·decodeRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $1, R9
	MOVQ rows+32(FP), BX
	MOVQ cols+40(FP), DX

rows_loop:
	XORQ AX, AX
	MOVQ DX, CX
	CMPQ CX, $16
	JLT  rows_8

rows_16:
	VPMOVZXWD (SI)(AX*2), Y0
	VPMOVZXWD 16(SI)(AX*2), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVDQU   Y0, (DI)(AX*4)
	VMOVDQU   Y1, 32(DI)(AX*4)
	ADDQ      $16, AX
	SUBQ      $16, CX
	CMPQ      CX, $16
	JGE       rows_16

rows_8:
	TESTQ     CX, CX
	JEQ       rows_next
	VPMOVZXWD (SI)(AX*2), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)(AX*4)

rows_next:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ BX
	JNE  rows_loop
	VZEROUPPER
	RET
