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


// qfiota<>: 0.0, 1.0, ..., 15.0 (the table decode's codes).
DATA qfiota<>+0(SB)/4, $0.0
DATA qfiota<>+4(SB)/4, $1.0
DATA qfiota<>+8(SB)/4, $2.0
DATA qfiota<>+12(SB)/4, $3.0
DATA qfiota<>+16(SB)/4, $4.0
DATA qfiota<>+20(SB)/4, $5.0
DATA qfiota<>+24(SB)/4, $6.0
DATA qfiota<>+28(SB)/4, $7.0
DATA qfiota<>+32(SB)/4, $8.0
DATA qfiota<>+36(SB)/4, $9.0
DATA qfiota<>+40(SB)/4, $10.0
DATA qfiota<>+44(SB)/4, $11.0
DATA qfiota<>+48(SB)/4, $12.0
DATA qfiota<>+52(SB)/4, $13.0
DATA qfiota<>+56(SB)/4, $14.0
DATA qfiota<>+60(SB)/4, $15.0
GLOBL qfiota<>(SB), RODATA|NOPTR, $64

// func quantEncodeRowsAVX512(dst *byte, x *float32, rows, width, rowBytes int, keyHash uint64, nbits uint64, levels float32)
//
// The whole message (rows ≥ 1 rows of width ≥ 1), as Encode's Go loop: per
// row, min/max (the last partial block loaded over NaNs, which VMINPS and
// VMAXPS skip), ±0 made +0, step and scale with the constant-row test, the
// header, the row's dither base mix(keyHash ^ row), then the codes 32 at a
// time, the last block masked (its codes beyond the row are zero, and
// only its bytes are stored).
//
// Registers: DI the row's header, SI its values, DX its codes, R15 the
// row, BX nbits, CX values left; Z15 lo, Z14 scale, Z13 top, Z11 the
// base's high half, Z10 the hash counters, Z9 their step, Z8/Z7 the hash
// multipliers, Z6 0xffff, Z5 NaN, Z16 +Inf, Z17 −Inf, Z18 zero.
TEXT ·quantEncodeRowsAVX512(SB), NOSPLIT, $0-60
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ nbits+48(FP), BX
	XORQ R15, R15
	VBROADCASTSS levels+56(FP), Z13
	VCVTTPS2DQ   Z13, Z13
	MOVL $0xe3779b90, AX           // 16·0x9e3779b9 mod 2³²
	VPBROADCASTD AX, Z9
	MOVL $0x21f0aaad, AX
	VPBROADCASTD AX, Z8
	MOVL $0x735a2d97, AX
	VPBROADCASTD AX, Z7
	MOVL $0xffff, AX
	VPBROADCASTD AX, Z6
	MOVL $0x7fc00000, AX
	VPBROADCASTD AX, Z5
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z16
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z17
	VPXORD Z18, Z18, Z18

rows_loop:
	CMPQ R15, rows+16(FP)
	JGE  rows_done

	// Min and max.
	MOVQ    SI, R8
	MOVQ    width+24(FP), CX
	VMOVAPS Z16, Z0
	VMOVAPS Z17, Z1
rmm_loop:
	CMPQ    CX, $16
	JLT     rmm_tail
	VMOVUPS 0(R8), Z4
	VMINPS  Z0, Z4, Z0
	VMAXPS  Z1, Z4, Z1
	ADDQ    $64, R8
	SUBQ    $16, CX
	JMP     rmm_loop
rmm_tail:
	TESTQ   CX, CX
	JEQ     rmm_reduce
	MOVQ    $-1, AX
	BZHIQ   CX, AX, AX
	KMOVW   AX, K1
	VMOVAPS Z5, Z4
	VMOVUPS 0(R8), K1, Z4
	VMINPS  Z0, Z4, Z0
	VMAXPS  Z1, Z4, Z1
rmm_reduce:
	VEXTRACTF32X8 $1, Z0, Y2
	VEXTRACTF32X8 $1, Z1, Y3
	VMINPS        Y2, Y0, Y0
	VMAXPS        Y3, Y1, Y1
	VEXTRACTF128  $1, Y0, X2
	VEXTRACTF128  $1, Y1, X3
	VMINPS        X2, X0, X0
	VMAXPS        X3, X1, X1
	VPERMILPS     $0x4e, X0, X2
	VPERMILPS     $0x4e, X1, X3
	VMINPS        X2, X0, X0
	VMAXPS        X3, X1, X1
	VPERMILPS     $0xb1, X0, X2
	VPERMILPS     $0xb1, X1, X3
	VMINPS        X2, X0, X0
	VMAXPS        X3, X1, X1
	VADDSS        X18, X0, X0      // lo + 0, hi + 0: −0 becomes +0
	VADDSS        X18, X1, X1

	// step = (hi − lo)/levels, scale = 2¹⁶/step; a constant row (step
	// not a positive finite number, or scale infinite) sends zeros.
	VSUBSS       X0, X1, X2
	VDIVSS       levels+56(FP), X2, X2
	MOVL         $0x47800000, AX   // 65536.0
	VMOVD        AX, X3
	VDIVSS       X2, X3, X3
	VMOVSS       X0, 0(DI)
	LEAQ         8(DI), DX
	VMOVD        X2, AX
	DECL         AX
	CMPL         AX, $0x7f7ffffe
	JA           rconst
	VMOVD        X3, AX
	CMPL         AX, $0x7f7fffff
	JA           rconst
	VMOVSS       X2, 4(DI)
	VBROADCASTSS X0, Z15
	VBROADCASTSS X3, Z14

	// base = mix(keyHash ^ row), splitmix64's finaliser.
	MOVQ  keyHash+40(FP), AX
	XORQ  R15, AX
	MOVQ  $0x9e3779b97f4a7c15, R8
	ADDQ  R8, AX
	MOVQ  AX, R8
	SHRQ  $30, R8
	XORQ  R8, AX
	MOVQ  $0xbf58476d1ce4e5b9, R8
	IMULQ R8, AX
	MOVQ  AX, R8
	SHRQ  $27, R8
	XORQ  R8, AX
	MOVQ  $0x94d049bb133111eb, R8
	IMULQ R8, AX
	MOVQ  AX, R8
	SHRQ  $31, R8
	XORQ  R8, AX
	VPBROADCASTD AX, Z12
	SHRQ  $32, AX
	VPBROADCASTD AX, Z11
	VPADDD qiota<>(SB), Z12, Z10

	MOVQ width+24(FP), CX
renc_loop:
	CMPQ    CX, $32
	JLT     renc_tail
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
	VPANDD  Z6, Z0, Z1
	VPSRLD  $16, Z0, Z2
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
	ADDQ       $128, SI
	SUBQ       $32, CX
	CMPQ       BX, $8
	JNE        renc_narrow
	VPMOVDB    Z3, 0(DX)
	VPMOVDB    Z4, 16(DX)
	ADDQ       $32, DX
	JMP        renc_loop
renc_narrow:
	VPMOVDB Z3, X3
	VPMOVDB Z4, X4
	CALL    ·quantPackNarrow(SB)
	CMPQ    BX, $4
	JNE     renc_n2
	MOVQ    R8, 0(DX)
	MOVQ    R10, 8(DX)
	ADDQ    $16, DX
	JMP     renc_loop
renc_n2:
	CMPQ BX, $2
	JNE  renc_n1
	MOVQ R8, 0(DX)
	ADDQ $8, DX
	JMP  renc_loop
renc_n1:
	MOVL R8, 0(DX)
	ADDQ $4, DX
	JMP  renc_loop

renc_tail:
	TESTQ   CX, CX
	JEQ     rnext
	// K1: the values of the first 16 lanes, K2 of the second.
	MOVQ    $-1, R9
	MOVQ    CX, AX
	BZHIQ   AX, R9, R10
	KMOVW   R10, K1
	SUBQ    $16, AX
	XORQ    R11, R11
	CMPQ    AX, $0
	CMOVQLT R11, AX
	BZHIQ   AX, R9, R10
	KMOVW   R10, K2
	VPXORD  Z11, Z10, Z0
	VPSRLD  $16, Z0, Z1
	VPXORD  Z1, Z0, Z0
	VPMULLD Z8, Z0, Z0
	VPSRLD  $15, Z0, Z1
	VPXORD  Z1, Z0, Z0
	VPMULLD Z7, Z0, Z0
	VPSRLD  $15, Z0, Z1
	VPXORD  Z1, Z0, Z0
	VPANDD  Z6, Z0, Z1
	VPSRLD  $16, Z0, Z2
	VMOVUPS.Z   0(SI), K1, Z3
	VSUBPS      Z15, Z3, Z3
	VMULPS      Z14, Z3, Z3
	VCVTTPS2DQ  Z3, Z3
	VPADDD      Z1, Z3, Z3
	VPSRLD      $16, Z3, Z3
	VPMINUD.Z   Z13, Z3, K1, Z3
	VMOVUPS.Z   64(SI), K2, Z4
	VSUBPS      Z15, Z4, Z4
	VMULPS      Z14, Z4, Z4
	VCVTTPS2DQ  Z4, Z4
	VPADDD      Z2, Z4, Z4
	VPSRLD      $16, Z4, Z4
	VPMINUD.Z   Z13, Z4, K2, Z4
	LEAQ        0(SI)(CX*4), SI
	CMPQ        BX, $8
	JNE         rtail_narrow
	VPMOVDB     Z3, K1, 0(DX)
	VPMOVDB     Z4, K2, 16(DX)
	JMP         rnext
rtail_narrow:
	VPMOVDB Z3, X3
	VPMOVDB Z4, X4
	CALL    ·quantPackNarrow(SB)
	// Store ⌈CX·nbits/8⌉ bytes of R8:R10.
	MOVQ     CX, AX
	IMULQ    BX, AX
	ADDQ     $7, AX
	SHRQ     $3, AX
	MOVQ     $-1, R9
	BZHIQ    AX, R9, R9
	KMOVW    R9, K3
	VMOVQ    R8, X0
	VPINSRQ  $1, R10, X0, X0
	VMOVDQU8 X0, K3, 0(DX)
	JMP      rnext

rconst:
	// step 0 and every code 0: clear rowBytes − 8 bytes.
	MOVL     $0, 4(DI)
	MOVQ     rowBytes+32(FP), CX
	SUBQ     $8, CX
rclr_loop:
	CMPQ     CX, $64
	JLT      rclr_tail
	VMOVDQU8 Z18, 0(DX)
	ADDQ     $64, DX
	SUBQ     $64, CX
	JMP      rclr_loop
rclr_tail:
	MOVQ     $-1, AX
	BZHIQ    CX, AX, AX
	KMOVQ    AX, K3
	VMOVDQU8 Z18, K3, 0(DX)
	MOVQ     width+24(FP), AX
	LEAQ     0(SI)(AX*4), SI

rnext:
	ADDQ rowBytes+32(FP), DI
	INCQ R15
	JMP  rows_loop

rows_done:
	VZEROUPPER
	RET

// quantPackNarrow gathers the 32 byte codes in X3 (values 0-15) and X4
// (16-31) into nbits-wide fields: R8 (and R10 for nbits 4) hold the packed
// bits, little-endian. BX is nbits; clobbers R9, R11, R12.
TEXT ·quantPackNarrow(SB), NOSPLIT|NOFRAME, $0-0
	VMOVQ   X3, R8
	VPEXTRQ $1, X3, R9
	VMOVQ   X4, R10
	VPEXTRQ $1, X4, R11
	CMPQ    BX, $4
	JNE     pn_2
	MOVQ    $0x0f0f0f0f0f0f0f0f, R12
	PEXTQ   R12, R8, R8
	PEXTQ   R12, R9, R9
	PEXTQ   R12, R10, R10
	PEXTQ   R12, R11, R11
	SHLQ    $32, R9
	ORQ     R9, R8
	SHLQ    $32, R11
	ORQ     R11, R10
	RET
pn_2:
	CMPQ  BX, $2
	JNE   pn_1
	MOVQ  $0x0303030303030303, R12
	PEXTQ R12, R8, R8
	PEXTQ R12, R9, R9
	PEXTQ R12, R10, R10
	PEXTQ R12, R11, R11
	SHLQ  $16, R9
	ORQ   R9, R8
	SHLQ  $32, R10
	ORQ   R10, R8
	SHLQ  $48, R11
	ORQ   R11, R8
	XORQ  R10, R10
	RET
pn_1:
	MOVQ  $0x0101010101010101, R12
	PEXTQ R12, R8, R8
	PEXTQ R12, R9, R9
	PEXTQ R12, R10, R10
	PEXTQ R12, R11, R11
	SHLQ  $8, R9
	ORQ   R9, R8
	SHLQ  $16, R10
	ORQ   R10, R8
	SHLQ  $24, R11
	ORQ   R11, R8
	XORQ  R10, R10
	RET

// func quantDecodeRowsAVX512(out *float32, src *byte, rows, width, rowBytes int, nbits uint64)
//
// The whole message (rows ≥ 1 rows of width ≥ 1), as Decode's Go loop: 8-bit
// codes as lo + float(c)·step (a multiply, then an add), narrower codes
// spread to bytes with PDEP and looked up (VPERMPS) in the row's table
// lo + k·step, 16 values at a time, the last block masked.
//
// Registers: DI the row's header, DX its codes, R13 its output, R15 the
// row, BX nbits, CX values left, R12 the PDEP mask, R14 8·nbits; Z15 lo,
// Z14 step, Z13 the table.
TEXT ·quantDecodeRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R13
	MOVQ src+8(FP), DI
	MOVQ nbits+40(FP), BX
	MOVQ BX, R14
	SHLQ $3, R14
	MOVQ $0x0f0f0f0f0f0f0f0f, R12
	CMPQ BX, $4
	JEQ  rdec_start
	MOVQ $0x0303030303030303, R12
	CMPQ BX, $2
	JEQ  rdec_start
	MOVQ $0x0101010101010101, R12
rdec_start:
	XORQ R15, R15

rdec_rows:
	CMPQ R15, rows+16(FP)
	JGE  rdec_done
	VBROADCASTSS 0(DI), Z15
	VBROADCASTSS 4(DI), Z14
	LEAQ 8(DI), DX
	MOVQ width+24(FP), CX
	CMPQ BX, $8
	JNE  rdec_table

rdec8_loop:
	CMPQ      CX, $16
	JLT       rdec8_tail
	VPMOVZXBD 0(DX), Z0
	VCVTDQ2PS Z0, Z0
	VMULPS    Z14, Z0, Z0
	VADDPS    Z15, Z0, Z0
	VMOVUPS   Z0, 0(R13)
	ADDQ      $16, DX
	ADDQ      $64, R13
	SUBQ      $16, CX
	JMP       rdec8_loop
rdec8_tail:
	TESTQ       CX, CX
	JEQ         rdec_next
	MOVQ        $-1, AX
	BZHIQ       CX, AX, AX
	KMOVW       AX, K1
	VMOVDQU8.Z  0(DX), K1, X0
	VPMOVZXBD   X0, Z0
	VCVTDQ2PS   Z0, Z0
	VMULPS      Z14, Z0, Z0
	VADDPS      Z15, Z0, Z0
	VMOVUPS     Z0, K1, 0(R13)
	LEAQ        0(R13)(CX*4), R13
	JMP         rdec_next

rdec_table:
	VMOVUPS qfiota<>(SB), Z13
	VMULPS  Z14, Z13, Z13
	VADDPS  Z15, Z13, Z13
rdecn_loop:
	CMPQ CX, $16
	JLT  rdecn_tail
	CMPQ BX, $4
	JNE  rdecn_2
	MOVL 0(DX), R8
	MOVL 4(DX), R9
	JMP  rdecn_go
rdecn_2:
	CMPQ    BX, $2
	JNE     rdecn_1
	MOVWQZX 0(DX), R8
	MOVWQZX 2(DX), R9
	JMP     rdecn_go
rdecn_1:
	MOVBQZX 0(DX), R8
	MOVBQZX 1(DX), R9
rdecn_go:
	PDEPQ     R12, R8, R8
	PDEPQ     R12, R9, R9
	VMOVQ     R8, X0
	VPINSRQ   $1, R9, X0, X0
	VPMOVZXBD X0, Z0
	VPERMPS   Z13, Z0, Z0
	VMOVUPS   Z0, 0(R13)
	MOVQ      BX, AX
	SHLQ      $1, AX               // 16 values: 2·nbits bytes
	ADDQ      AX, DX
	ADDQ      $64, R13
	SUBQ      $16, CX
	JMP       rdecn_loop
rdecn_tail:
	TESTQ      CX, CX
	JEQ        rdec_next
	MOVQ       $-1, R9
	BZHIQ      CX, R9, AX
	KMOVW      AX, K1
	MOVQ       CX, AX
	IMULQ      BX, AX
	ADDQ       $7, AX
	SHRQ       $3, AX              // ⌈CX·nbits/8⌉ code bytes
	BZHIQ      AX, R9, AX
	KMOVW      AX, K2
	VMOVDQU8.Z 0(DX), K2, X0
	VMOVQ      X0, R8
	SHRXQ      R14, R8, R9         // the codes of values 8-15
	PDEPQ      R12, R8, R8
	PDEPQ      R12, R9, R9
	VMOVQ      R8, X0
	VPINSRQ    $1, R9, X0, X0
	VPMOVZXBD  X0, Z0
	VPERMPS    Z13, Z0, Z0
	VMOVUPS    Z0, K1, 0(R13)
	LEAQ       0(R13)(CX*4), R13

rdec_next:
	ADDQ rowBytes+32(FP), DI
	INCQ R15
	JMP  rdec_rows

rdec_done:
	VZEROUPPER
	RET
