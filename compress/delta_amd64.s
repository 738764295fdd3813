//go:build !noasm && !amd64.v3

#include "textflag.h"

// AVX-512 (F, BW) + BMI2 kernels of the delta codec's rows, twins of
// diffMinMax, the encodeCodes loops and applyDeltaRow in deltarow.go: the
// same operations in the same order per value (no fused multiply-add), 16
// values at a time, the last partial block under a mask.

// func deltaDiffMinMaxAVX512(diff, row, rec *float32, n int) (lo, hi float32)
TEXT ·deltaDiffMinMaxAVX512(SB), NOSPLIT, $0-40
	MOVQ         diff+0(FP), DI
	MOVQ         row+8(FP), SI
	MOVQ         rec+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         $0x7f800000, AX
	VPBROADCASTD AX, Z0            // lo: +Inf
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z1            // hi: −Inf

dmm_loop:
	CMPQ    CX, $16
	JLT     dmm_tail
	VMOVUPS 0(SI), Z4
	VSUBPS  0(DX), Z4, Z4          // row − rec
	VMOVUPS Z4, 0(DI)
	VMINPS  Z0, Z4, Z0             // a NaN in Z4 keeps Z0, as v < lo is false
	VMAXPS  Z1, Z4, Z1
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
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
	VMOVUPS   Z4, K1, 0(DI)
	VMINPS    Z0, Z4, K1, Z0
	VMAXPS    Z1, Z4, K1, Z1

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
	VMOVSS        X0, lo+32(FP)
	VMOVSS        X1, hi+36(FP)
	VZEROUPPER
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

// func deltaCodesAVX512(codes *byte, diff, rec *float32, n, nbits int, qlo, inv, dlo, dstep float32)
TEXT ·deltaCodesAVX512(SB), NOSPLIT, $0-56
	MOVQ         codes+0(FP), DI
	MOVQ         diff+8(FP), SI
	MOVQ         rec+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVQ         nbits+32(FP), R8
	VBROADCASTSS qlo+40(FP), Z10
	VBROADCASTSS inv+44(FP), Z11
	VBROADCASTSS dlo+48(FP), Z12
	VBROADCASTSS dstep+52(FP), Z13
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
	JEQ    dc_done
	MOVQ   $-1, AX
	BZHIQ  CX, AX, BX
	KMOVW  BX, K1
	IMULQ  R8, CX
	ADDQ   $7, CX
	SHRQ   $3, CX
	BZHIQ  CX, AX, BX
	KMOVQ  BX, K3
	CALL   deltaCodesBlock<>(SB)

dc_done:
	VZEROUPPER
	RET

// deltaCodesBlock codes the values of the block at SI in the lanes of K1
// (the others are 0) into the bytes of K3 at DI and adds their levels to
// the block at DX. It clobbers AX, BX, K2, Z0–Z5.
TEXT deltaCodesBlock<>(SB), NOSPLIT|NOFRAME, $0-0
	VMOVUPS.Z   0(SI), K1, Z0
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
	VMOVUPS.Z   0(DX), K1, Z4
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

// func deltaApplyAVX512(rec *float32, codes *byte, n, nbits int, dlo, dstep float32)
TEXT ·deltaApplyAVX512(SB), NOSPLIT, $0-40
	MOVQ         rec+0(FP), DX
	MOVQ         codes+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         nbits+24(FP), R8
	VBROADCASTSS dlo+32(FP), Z12
	VBROADCASTSS dstep+36(FP), Z13
	deltaMasks
	MOVQ         $-1, AX
	BZHIQ        R10, AX, BX
	KMOVQ        BX, K4
	KXNORW       K5, K5, K5

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
	JEQ   da_done
	MOVQ  $-1, AX
	BZHIQ CX, AX, BX
	KMOVW BX, K1
	IMULQ R8, CX
	ADDQ  $7, CX
	SHRQ  $3, CX
	BZHIQ CX, AX, BX
	KMOVQ BX, K3
	CALL  deltaApplyBlock<>(SB)

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
