//go:build !noasm

#include "textflag.h"

// AVX-512 (F, BW) + BMI2 kernels of the quantiser, twins of encodeRow, the
// decode loops and minMax in quant.go.

// qiota<>: k·0x9e3779b9 mod 2³² for k = 0..15 (the hash counters' Weyl
// steps).
DATA qiota<>+0(SB)/4, $0x00000000
DATA qiota<>+4(SB)/4, $0x9e3779b9
DATA qiota<>+8(SB)/4, $0x3c6ef372
DATA qiota<>+12(SB)/4, $0xdaa66d2b
DATA qiota<>+16(SB)/4, $0x78dde6e4
DATA qiota<>+20(SB)/4, $0x1715609d
DATA qiota<>+24(SB)/4, $0xb54cda56
DATA qiota<>+28(SB)/4, $0x5384540f
DATA qiota<>+32(SB)/4, $0xf1bbcdc8
DATA qiota<>+36(SB)/4, $0x8ff34781
DATA qiota<>+40(SB)/4, $0x2e2ac13a
DATA qiota<>+44(SB)/4, $0xcc623af3
DATA qiota<>+48(SB)/4, $0x6a99b4ac
DATA qiota<>+52(SB)/4, $0x08d12e65
DATA qiota<>+56(SB)/4, $0xa708a81e
DATA qiota<>+60(SB)/4, $0x454021d7
GLOBL qiota<>(SB), RODATA|NOPTR, $64

// func quantEncodeAVX512(codes *byte, row []float32, lo, scale float32, top uint32, base uint64, nbits uint64)
//
// 32 values per step: one 16-lane hash vector (its low halves dither
// values 0-15, its high halves values 16-31), codes (t + u) >> 16 clamped
// to top, narrowed to bytes, then for nbits < 8 gathered with PEXT.
TEXT ·quantEncodeAVX512(SB), NOSPLIT, $0-64
	MOVQ codes+0(FP), DI
	MOVQ row_base+8(FP), SI
	MOVQ row_len+16(FP), CX
	VBROADCASTSS lo+32(FP), Z15
	VBROADCASTSS scale+36(FP), Z14
	MOVL top+40(FP), AX
	VPBROADCASTD AX, Z13
	MOVQ base+48(FP), AX
	VPBROADCASTD AX, Z12           // low 32 bits
	SHRQ $32, AX
	VPBROADCASTD AX, Z11           // high 32 bits
	MOVQ nbits+56(FP), BX
	VMOVDQU32 qiota<>(SB), Z10
	VPADDD Z12, Z10, Z10           // counters' Weyl values + base
	MOVL $0xe3779b90, AX           // 16·0x9e3779b9 mod 2³²
	VPBROADCASTD AX, Z9
	MOVL $0x21f0aaad, AX
	VPBROADCASTD AX, Z8
	MOVL $0x735a2d97, AX
	VPBROADCASTD AX, Z7
	MOVL $0xffff, AX
	VPBROADCASTD AX, Z6
	MOVQ $0x0f0f0f0f0f0f0f0f, R12
	MOVQ $0x0303030303030303, R13
	MOVQ $0x0101010101010101, R14

enc_loop:
	CMPQ CX, $32
	JLT  enc_done
	// h = lowbias32(weyl ^ hi)
	VPXORD  Z11, Z10, Z0
	VPSRLD  $16, Z0, Z1
	VPXORD  Z1, Z0, Z0
	VPMULLD Z8, Z0, Z0
	VPSRLD  $15, Z0, Z1
	VPXORD  Z1, Z0, Z0
	VPMULLD Z7, Z0, Z0
	VPSRLD  $15, Z0, Z1
	VPXORD  Z1, Z0, Z0
	VPADDD  Z9, Z10, Z10
	VPANDD  Z6, Z0, Z1             // dither of values 0-15
	VPSRLD  $16, Z0, Z2            // dither of values 16-31

	VMOVUPS    0(SI), Z3
	VSUBPS     Z15, Z3, Z3
	VMULPS     Z14, Z3, Z3
	VCVTTPS2DQ Z3, Z3
	VPADDD     Z1, Z3, Z3
	VPSRLD     $16, Z3, Z3
	VPMINUD    Z13, Z3, Z3
	VMOVUPS    64(SI), Z4
	VSUBPS     Z15, Z4, Z4
	VMULPS     Z14, Z4, Z4
	VCVTTPS2DQ Z4, Z4
	VPADDD     Z2, Z4, Z4
	VPSRLD     $16, Z4, Z4
	VPMINUD    Z13, Z4, Z4
	VPMOVDB    Z3, X3
	VPMOVDB    Z4, X4
	ADDQ       $128, SI
	SUBQ       $32, CX

	CMPQ BX, $8
	JNE  enc_narrow
	VMOVDQU X3, 0(DI)
	VMOVDQU X4, 16(DI)
	ADDQ    $32, DI
	JMP     enc_loop

enc_narrow:
	VMOVQ   X3, R8
	VPEXTRQ $1, X3, R9
	VMOVQ   X4, R10
	VPEXTRQ $1, X4, R11
	CMPQ    BX, $4
	JNE     enc_2
	PEXTQ   R12, R8, R8
	PEXTQ   R12, R9, R9
	PEXTQ   R12, R10, R10
	PEXTQ   R12, R11, R11
	SHLQ    $32, R9
	ORQ     R9, R8
	SHLQ    $32, R11
	ORQ     R11, R10
	MOVQ    R8, 0(DI)
	MOVQ    R10, 8(DI)
	ADDQ    $16, DI
	JMP     enc_loop

enc_2:
	CMPQ  BX, $2
	JNE   enc_1
	PEXTQ R13, R8, R8
	PEXTQ R13, R9, R9
	PEXTQ R13, R10, R10
	PEXTQ R13, R11, R11
	SHLQ  $16, R9
	ORQ   R9, R8
	SHLQ  $32, R10
	ORQ   R10, R8
	SHLQ  $48, R11
	ORQ   R11, R8
	MOVQ  R8, 0(DI)
	ADDQ  $8, DI
	JMP   enc_loop

enc_1:
	PEXTQ R14, R8, R8
	PEXTQ R14, R9, R9
	PEXTQ R14, R10, R10
	PEXTQ R14, R11, R11
	SHLQ  $8, R9
	ORQ   R9, R8
	SHLQ  $16, R10
	ORQ   R10, R8
	SHLQ  $24, R11
	ORQ   R11, R8
	MOVL  R8, 0(DI)
	ADDQ  $4, DI
	JMP   enc_loop

enc_done:
	VZEROUPPER
	RET

// func quantDecodeAVX512(row []float32, codes *byte, lo, step float32, tab *[16]float32, nbits uint64)
//
// 16 values per step: 8-bit codes as lo + float(c)·step (a multiply, then
// an add, as the Go loop); narrower codes spread to bytes with PDEP,
// widened to dwords and looked up in tab with VPERMPS.
TEXT ·quantDecodeAVX512(SB), NOSPLIT, $0-56
	MOVQ row_base+0(FP), DI
	MOVQ row_len+8(FP), CX
	MOVQ codes+24(FP), SI
	VBROADCASTSS lo+32(FP), Z15
	VBROADCASTSS step+36(FP), Z14
	MOVQ nbits+48(FP), BX
	CMPQ BX, $8
	JEQ  dec8_loop
	MOVQ tab+40(FP), AX
	VMOVUPS 0(AX), Z13
	MOVQ $0x0f0f0f0f0f0f0f0f, R12
	MOVQ $0x0303030303030303, R13
	MOVQ $0x0101010101010101, R14
	CMPQ BX, $4
	JEQ  dec4_loop
	CMPQ BX, $2
	JEQ  dec2_loop

dec1_loop:
	CMPQ    CX, $16
	JLT     dec_done
	MOVBQZX 0(SI), R8
	MOVBQZX 1(SI), R9
	PDEPQ   R14, R8, R8
	PDEPQ   R14, R9, R9
	ADDQ    $2, SI
	JMP     dec_lookup

dec2_loop:
	CMPQ    CX, $16
	JLT     dec_done
	MOVWQZX 0(SI), R8
	MOVWQZX 2(SI), R9
	PDEPQ   R13, R8, R8
	PDEPQ   R13, R9, R9
	ADDQ    $4, SI
	JMP     dec_lookup

dec4_loop:
	CMPQ  CX, $16
	JLT   dec_done
	MOVL  0(SI), R8
	MOVL  4(SI), R9
	PDEPQ R12, R8, R8
	PDEPQ R12, R9, R9
	ADDQ  $8, SI

dec_lookup:
	VMOVQ     R8, X0
	VPINSRQ   $1, R9, X0, X0
	VPMOVZXBD X0, Z0
	VPERMPS   Z13, Z0, Z0
	VMOVUPS   Z0, 0(DI)
	ADDQ      $64, DI
	SUBQ      $16, CX
	CMPQ      BX, $4
	JEQ       dec4_loop
	CMPQ      BX, $2
	JEQ       dec2_loop
	JMP       dec1_loop

dec8_loop:
	CMPQ      CX, $16
	JLT       dec_done
	VPMOVZXBD 0(SI), Z0
	VCVTDQ2PS Z0, Z0
	VMULPS    Z14, Z0, Z0
	VADDPS    Z15, Z0, Z0
	VMOVUPS   Z0, 0(DI)
	ADDQ      $16, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       dec8_loop

dec_done:
	VZEROUPPER
	RET

// func minMaxAVX512(x []float32) (lo, hi float32)
//
// VMINPS/VMAXPS return their second source when either is a NaN; that is
// the accumulator, so NaNs are skipped as minMax's comparisons skip them.
TEXT ·minMaxAVX512(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z0   // +Inf: the minima
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z1   // −Inf: the maxima
	VMOVUPS Z0, Z2
	VMOVUPS Z1, Z3

mm_loop2:
	CMPQ    CX, $32
	JLT     mm_loop1
	VMOVUPS 0(SI), Z4
	VMOVUPS 64(SI), Z5
	VMINPS  Z0, Z4, Z0
	VMAXPS  Z1, Z4, Z1
	VMINPS  Z2, Z5, Z2
	VMAXPS  Z3, Z5, Z3
	ADDQ    $128, SI
	SUBQ    $32, CX
	JMP     mm_loop2

mm_loop1:
	CMPQ    CX, $16
	JLT     mm_reduce
	VMOVUPS 0(SI), Z4
	VMINPS  Z0, Z4, Z0
	VMAXPS  Z1, Z4, Z1
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     mm_loop1

mm_reduce:
	VMINPS         Z2, Z0, Z0
	VMAXPS         Z3, Z1, Z1
	VEXTRACTF32X8  $1, Z0, Y2
	VEXTRACTF32X8  $1, Z1, Y3
	VMINPS         Y2, Y0, Y0
	VMAXPS         Y3, Y1, Y1
	VEXTRACTF128   $1, Y0, X2
	VEXTRACTF128   $1, Y1, X3
	VMINPS         X2, X0, X0
	VMAXPS         X3, X1, X1
	VPERMILPS      $0x4e, X0, X2
	VPERMILPS      $0x4e, X1, X3
	VMINPS         X2, X0, X0
	VMAXPS         X3, X1, X1
	VPERMILPS      $0xb1, X0, X2
	VPERMILPS      $0xb1, X1, X3
	VMINPS         X2, X0, X0
	VMAXPS         X3, X1, X1
	VMOVSS         X0, lo+24(FP)
	VMOVSS         X1, hi+28(FP)
	VZEROUPPER
	RET

// func bf16EncodeAVX512(dst *byte, x []float32)
//
// 16 values per step, as toBF16: round to nearest even (b + 0x7fff +
// bit 16 of b, then the top half), and NaNs become their top half with
// the quiet bit set.
TEXT ·bf16EncodeAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ x_len+16(FP), CX
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

bfe_loop:
	CMPQ      CX, $16
	JLT       bfe_done
	VMOVDQU32 0(SI), Z0
	VPSRLD    $16, Z0, Z1
	VPANDD    Z15, Z1, Z2
	VPADDD    Z14, Z2, Z2
	VPADDD    Z0, Z2, Z2
	VPSRLD    $16, Z2, Z2       // rounded
	VPANDD    Z13, Z0, Z3
	VPCMPUD   $6, Z12, Z3, K1   // |b| > +Inf: NaN
	VPORD     Z11, Z1, Z1
	VMOVDQU32 Z1, K1, Z2
	VPMOVDW   Z2, Y2
	VMOVDQU   Y2, 0(DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JMP       bfe_loop

bfe_done:
	VZEROUPPER
	RET

// func bf16DecodeAVX512(out []float32, src *byte)
TEXT ·bf16DecodeAVX512(SB), NOSPLIT, $0-32
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ src+24(FP), SI

bfd_loop:
	CMPQ      CX, $16
	JLT       bfd_done
	VPMOVZXWD 0(SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVDQU32 Z0, 0(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       bfd_loop

bfd_done:
	VZEROUPPER
	RET
