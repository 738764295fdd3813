//go:build !noasm && !amd64.v3

#include "textflag.h"

// AVX-512 (F, BW) + BMI2 kernels of the delta codec's rows, twins of
// diffMinMax, the encodeCodes loops and applyDeltaRow in deltarow.go: the
// same operations in the same order per value (no fused multiply-add), 16
// values at a time, the last partial block under a mask.

// deltaDiffMinMax leaves the minimum and maximum of the CX values of the
// row at SI less those of the reconstruction at DX, NaNs left out (±Inf
// if none), in X0 and X1. It advances SI and DX and clobbers AX, CX, K1,
// Z0–Z5.
TEXT deltaDiffMinMax<>(SB), NOSPLIT|NOFRAME, $0-0
	MOVL         $0x7f800000, AX
	VPBROADCASTD AX, Z0            // lo: +Inf
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z1            // hi: −Inf

dmm_loop:
	CMPQ    CX, $16
	JLT     dmm_tail
	VMOVUPS 0(SI), Z4
	VSUBPS  0(DX), Z4, Z4          // row − rec
	VMINPS  Z0, Z4, Z0             // a NaN in Z4 keeps Z0, as v < lo is false
	VMAXPS  Z1, Z4, Z1
	ADDQ    $64, SI
	ADDQ    $64, DX
	SUBQ    $16, CX
	JMP     dmm_loop

dmm_tail:
	TESTQ     CX, CX
	JEQ       dmm_reduce
	MOVQ      $-1, AX
	BZHIQ     CX, AX, AX
	KMOVW     AX, K1
	VMOVUPS.Z 0(SI), K1, Z4
	VMOVUPS.Z 0(DX), K1, Z5
	VSUBPS    Z5, Z4, Z4
	VMINPS    Z0, Z4, K1, Z0
	VMAXPS    Z1, Z4, K1, Z1
	LEAQ      0(SI)(CX*4), SI
	LEAQ      0(DX)(CX*4), DX

dmm_reduce:
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
	RET

// deltaRowHead is deltaRowHeader: from the minimum and maximum in X0 and
// X1 and nbits in R8 it writes the row's header at DI (advancing DI past
// it) and broadcasts the minimum and reciprocal step the codes are rounded
// with to Z10 and Z11 and the minimum and step they decode to to Z12 and
// Z13. It clobbers AX, BX, CX, DX, X0–X7.
TEXT deltaRowHead<>(SB), NOSPLIT|NOFRAME, $0-0
	VXORPS X7, X7, X7
	VADDSS X7, X0, X0              // lo + 0, hi + 0: −0 becomes +0
	VADDSS X7, X1, X1

	// lo16 (BX) = bf16Down(lo): the top half, one further from 0 if lo is
	// negative, not NaN, and has low bits.
	VMOVD X0, AX
	MOVL  AX, BX
	SHRL  $16, BX
	TESTL $0xffff, AX
	JEQ   drh_lo_done
	TESTL AX, AX
	JNS   drh_lo_done
	MOVL  AX, CX
	ANDL  $0x7fffffff, CX
	CMPL  CX, $0x7f800000
	JHI   drh_lo_done
	INCL  BX

drh_lo_done:
	MOVL   BX, AX
	SHLL   $16, AX
	VMOVD  AX, X2                  // qlo
	MOVL   $1, CX
	SHLXL  R8, CX, CX
	DECL   CX
	VCVTSI2SSL CX, X4, X4          // levels
	VSUBSS X2, X1, X3              // hi − qlo
	VDIVSS X4, X3, X3              // ÷ levels

	// step16 (DX) = bf16Up(X3) = bf16Down(−X3) ^ 0x8000.
	VMOVD X3, AX
	XORL  $0x80000000, AX
	MOVL  AX, DX
	SHRL  $16, DX
	TESTL $0xffff, AX
	JEQ   drh_step_done
	TESTL AX, AX
	JNS   drh_step_done
	MOVL  AX, CX
	ANDL  $0x7fffffff, CX
	CMPL  CX, $0x7f800000
	JHI   drh_step_done
	INCL  DX

drh_step_done:
	XORL   $0x8000, DX
	MOVL   DX, AX
	SHLL   $16, AX
	VMOVD  AX, X5                  // step
	MOVL   $0x3f800000, CX
	VMOVD  CX, X6
	VDIVSS X5, X6, X6              // inv = 1/step

	// Not finite (qlo, step; inv where step > 0) or step < 0: zeros.
	MOVL  BX, CX
	SHLL  $16, CX
	ANDL  $0x7f800000, CX
	CMPL  CX, $0x7f800000
	JEQ   drh_bad
	MOVL  AX, CX
	ANDL  $0x7f800000, CX
	CMPL  CX, $0x7f800000
	JEQ   drh_bad
	TESTL $0x7fff, DX
	JEQ   drh_ok                   // ±0: neither < 0 nor > 0
	TESTL $0x8000, DX
	JNE   drh_bad                  // < 0
	VMOVD X6, CX
	ANDL  $0x7f800000, CX
	CMPL  CX, $0x7f800000
	JNE   drh_ok

drh_bad:
	XORL BX, BX
	XORL DX, DX

drh_ok:
	TESTL  DX, DX
	JNE    drh_store
	VXORPS X6, X6, X6              // step16 0: every code 0

drh_store:
	MOVW         BX, 0(DI)
	MOVW         DX, 2(DI)
	ADDQ         $4, DI
	VBROADCASTSS X2, Z10
	VBROADCASTSS X6, Z11
	SHLL         $16, BX
	VMOVD        BX, X3
	VBROADCASTSS X3, Z12
	SHLL         $16, DX
	VMOVD        DX, X3
	VBROADCASTSS X3, Z13
	RET

// deltaMasks sets R9 to the PEXT/PDEP mask of nbits (R8) codes one to a
// byte, R10 to a block's bytes (2·nbits) and R11 to 8·nbits; AX is
// clobbered.
#define deltaMasks \
	MOVL  $1, AX                      \
	SHLXQ R8, AX, AX                  \
	DECQ  AX                          \
	MOVQ  $0x0101010101010101, R9     \
	IMULQ AX, R9                      \
	LEAQ  (R8)(R8*1), R10             \
	LEAQ  0(R8*8), R11

// func deltaEncodeRowsAVX512(dst *byte, x, rec *float32, rows, width, nbits int)
//
// Every row of x in turn: its difference against rec (taken twice rather
// than stored, which would stall the loads that follow), header and codes (rowBytes(nbits, width) bytes at dst, one row after another),
// and rec updated to what the codes decode to.
TEXT ·deltaEncodeRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), R13
	MOVQ         rec+16(FP), R14
	MOVQ         rows+24(FP), R12
	MOVQ         nbits+40(FP), R8
	deltaMasks
	VPBROADCASTD AX, Z14
	VCVTDQ2PS    Z14, Z14             // top
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z15              // 1
	MOVL         $0x3f000000, AX
	VPBROADCASTD AX, Z16              // ½
	MOVQ         $-1, AX
	BZHIQ        R10, AX, BX
	KMOVQ        BX, K4               // a whole block's bytes
	KXNORW       K5, K5, K5           // a whole block's values

	MOVQ         R13, SI
	MOVQ         R14, DX
	MOVQ         width+32(FP), CX
	CALL         deltaDiffMinMax<>(SB)
	VMOVAPS      X0, X8
	VMOVAPS      X1, X9

der_row:
	TESTQ   R12, R12
	JEQ     der_done
	VMOVAPS X8, X0
	VMOVAPS X9, X1
	MOVQ    dst+0(FP), DI
	CALL    deltaRowHead<>(SB)
	MOVQ    DI, dst+0(FP)

	// The next row's minimum and maximum, before this row's reconstruction
	// is stored: a load of the next row that met those masked stores would
	// wait for them to reach the cache.
	CMPQ    R12, $1
	JEQ     der_codes
	MOVQ    width+32(FP), CX
	LEAQ    0(R13)(CX*4), SI
	LEAQ    0(R14)(CX*4), DX
	CALL    deltaDiffMinMax<>(SB)
	VMOVAPS X0, X8
	VMOVAPS X1, X9

der_codes:
	MOVQ  dst+0(FP), DI
	MOVQ  R13, SI
	MOVQ  R14, DX
	MOVQ  width+32(FP), CX
	LEAQ  0(R13)(CX*4), R13           // the next row
	LEAQ  0(R14)(CX*4), R14           // the next row's reconstruction

dc_loop:
	CMPQ   CX, $16
	JLT    dc_tail
	KMOVW  K5, K1
	KMOVQ  K4, K3
	CALL   deltaCodesBlock<>(SB)
	ADDQ   $64, SI
	ADDQ   $64, DX
	ADDQ   R10, DI
	SUBQ   $16, CX
	JMP    dc_loop

dc_tail:
	TESTQ  CX, CX
	JEQ    dc_row_done
	MOVQ   $-1, AX
	BZHIQ  CX, AX, BX
	KMOVW  BX, K1
	IMULQ  R8, CX
	ADDQ   $7, CX
	SHRQ   $3, CX
	BZHIQ  CX, AX, BX
	KMOVQ  BX, K3
	CALL   deltaCodesBlock<>(SB)
	ADDQ   CX, DI

dc_row_done:
	MOVQ DI, dst+0(FP)
	DECQ R12
	JMP  der_row

der_done:
	VZEROUPPER
	RET

// deltaCodesBlock codes the differences of the row's block at SI and the
// reconstruction's at DX in the lanes of K1
// (the others are 0) into the bytes of K3 at DI and adds their levels to
// the block at DX. It clobbers AX, BX, K2, Z0–Z5.
TEXT deltaCodesBlock<>(SB), NOSPLIT|NOFRAME, $0-0
	VMOVUPS.Z   0(SI), K1, Z0
	VMOVUPS.Z   0(DX), K1, Z4
	VSUBPS      Z4, Z0, Z0            // d = row − rec
	VSUBPS      Z10, Z0, Z1           // d − qlo
	VMULPS      Z11, Z1, Z1           // ·inv
	VADDPS      Z16, Z1, Z1           // + ½
	VMINPS      Z14, Z1, Z2           // min(q, top)
	VCVTTPS2DQ  Z2, Z2
	VCMPPS      $0x1d, Z15, Z1, K1, K2 // q ≥ 1 (false for NaN)
	VMOVDQA32.Z Z2, K2, Z2            // the codes
	VCVTDQ2PS   Z2, Z3
	VMULPS      Z13, Z3, Z3           // code·dstep
	VADDPS      Z3, Z12, Z3           // dlo + code·dstep
	VADDPS      Z3, Z4, Z4            // rec + level
	VMOVUPS     Z4, K1, 0(DX)
	VPMOVDB     Z2, X5
	CMPQ        R8, $8
	JEQ         dcb_store
	VMOVQ       X5, AX
	VPEXTRQ     $1, X5, BX
	PEXTQ       R9, AX, AX
	PEXTQ       R9, BX, BX
	SHLXQ       R11, BX, BX
	ORQ         BX, AX
	VMOVQ       AX, X5

dcb_store:
	VMOVDQU8 X5, K3, 0(DI)
	RET

// func deltaApplyRowsAVX512(rec *float32, src *byte, rows, width, nbits int)
//
// Adds each of rows rows' decoded difference (header and codes,
// rowBytes(nbits, width) bytes each, one after another at src) to rec's
// rows.
TEXT ·deltaApplyRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ         rec+0(FP), DX
	MOVQ         src+8(FP), SI
	MOVQ         rows+16(FP), R12
	MOVQ         nbits+32(FP), R8
	deltaMasks
	MOVQ         $-1, AX
	BZHIQ        R10, AX, BX
	KMOVQ        BX, K4
	KXNORW       K5, K5, K5

da_row:
	TESTQ        R12, R12
	JEQ          da_done
	MOVWLZX      0(SI), AX
	SHLL         $16, AX
	VMOVD        AX, X12
	VBROADCASTSS X12, Z12             // dlo
	MOVWLZX      2(SI), AX
	SHLL         $16, AX
	VMOVD        AX, X13
	VBROADCASTSS X13, Z13             // dstep
	ADDQ         $4, SI
	MOVQ         width+24(FP), CX

da_loop:
	CMPQ  CX, $16
	JLT   da_tail
	KMOVW K5, K1
	KMOVQ K4, K3
	CALL  deltaApplyBlock<>(SB)
	ADDQ  R10, SI
	ADDQ  $64, DX
	SUBQ  $16, CX
	JMP   da_loop

da_tail:
	TESTQ CX, CX
	JEQ   da_row_done
	MOVQ  $-1, AX
	BZHIQ CX, AX, BX
	KMOVW BX, K1
	MOVQ  CX, R13
	IMULQ R8, CX
	ADDQ  $7, CX
	SHRQ  $3, CX
	BZHIQ CX, AX, BX
	KMOVQ BX, K3
	CALL  deltaApplyBlock<>(SB)
	LEAQ  0(DX)(R13*4), DX
	ADDQ  CX, SI

da_row_done:
	DECQ R12
	JMP  da_row

da_done:
	VZEROUPPER
	RET

// deltaApplyBlock adds the levels of the codes in the bytes of K3 at SI to
// the lanes of K1 of the block at DX. It clobbers AX, BX, Z2–Z5.
TEXT deltaApplyBlock<>(SB), NOSPLIT|NOFRAME, $0-0
	VMOVDQU8.Z 0(SI), K3, X5
	CMPQ       R8, $8
	JEQ        dab_widen
	VMOVQ      X5, AX
	SHRXQ      R11, AX, BX
	PDEPQ      R9, AX, AX
	PDEPQ      R9, BX, BX
	VMOVQ      AX, X5
	VPINSRQ    $1, BX, X5, X5

dab_widen:
	VPMOVZXBD X5, Z2
	VCVTDQ2PS Z2, Z3
	VMULPS    Z13, Z3, Z3             // code·dstep
	VADDPS    Z3, Z12, Z3             // dlo + code·dstep
	VMOVUPS.Z 0(DX), K1, Z4
	VADDPS    Z3, Z4, Z4              // rec + level
	VMOVUPS   Z4, K1, 0(DX)
	RET
