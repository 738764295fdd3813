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

// func prefetchAVX512(p *uint16, bytes int)
TEXT ·prefetchAVX512(SB), NOSPLIT, $0-16
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
