//go:build !noasm

#include "textflag.h"

// COUNT64 sets dst to the mask of the 64 keys in z0–z3 at or above cand
// (its popcount is the count); clobbers K1–K4.
#define COUNT64(cand, z0, z1, z2, z3, dst) \
	VPCMPUD  $5, cand, z0, K1; \
	VPCMPUD  $5, cand, z1, K2; \
	VPCMPUD  $5, cand, z2, K3; \
	VPCMPUD  $5, cand, z3, K4; \
	KUNPCKWD K1, K2, K1;       \
	KUNPCKWD K3, K4, K3;       \
	KUNPCKDQ K1, K3, K1;       \
	KMOVQ    K1, dst

// func topkSelectAVX512(keys, bits *uint32, mask *uint64, n, k int) (thr uint32, atLeast int)
//
// The twin of topkSelectGo (topk_amd64_test.go): keys[j] = |bits[j]| for
// the n values, zero up to a multiple of 16; then the threshold search,
// two bits a step, counting three candidates per pass over the keys. When
// exactly k keys are at or above the threshold, it also sets the mask
// bits of their columns (16 bits per block of keys).
TEXT ·topkSelectAVX512(SB), NOSPLIT, $0-56
	MOVQ keys+0(FP), DI
	MOVQ bits+8(FP), SI
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), DX

	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	VPXORD       Z6, Z6, Z6 // max key
	XORQ         R8, R8        // nonzero keys
	MOVQ         DI, R9
	MOVQ         CX, R10

tsel_abs:
	CMPQ      R10, $16
	JLT       tsel_abs_tail
	VPANDD    0(SI), Z31, Z0
	VMOVDQU32 Z0, 0(R9)
	VPMAXUD   Z0, Z6, Z6
	VPTESTMD  Z0, Z0, K1
	KMOVW     K1, AX
	POPCNTL   AX, AX
	ADDQ      AX, R8
	ADDQ      $64, SI
	ADDQ      $64, R9
	SUBQ      $16, R10
	JMP       tsel_abs

tsel_abs_tail:
	TESTQ       R10, R10
	JEQ         tsel_max
	MOVQ        $-1, AX
	BZHIQ       R10, AX, AX
	KMOVW       AX, K2
	VMOVDQU32.Z 0(SI), K2, Z0
	VPANDD      Z31, Z0, Z0
	VMOVDQU32   Z0, 0(R9)
	VPMAXUD     Z0, Z6, Z6
	VPTESTMD    Z0, Z0, K1
	KMOVW       K1, AX
	POPCNTL     AX, AX
	ADDQ        AX, R8

tsel_max:
	VEXTRACTI64X4 $1, Z6, Y1
	VPMAXUD       Y1, Y6, Y6
	VEXTRACTI128  $1, Y6, X1
	VPMAXUD       X1, X6, X6
	VPSHUFD       $0x4e, X6, X1
	VPMAXUD       X1, X6, X6
	VPSHUFD       $0xb1, X6, X1
	VPMAXUD       X1, X6, X6
	VMOVD         X6, R11 // the largest key

	// A NaN: atLeast −1.
	CMPL R11, $0x7f800000
	JHI  tsel_nan

	// At most k nonzero keys: 0 or 1 is the threshold.
	CMPQ R8, DX
	JLT  tsel_zero
	JEQ  tsel_one

	// R12 = thr, R13 = atLeast, R14 = the step's low bit 1<<s, where
	// bits s+1..s are settled next; R10 = 16-key blocks.
	XORQ  R12, R12
	MOVQ  CX, R13
	BSRL  R11, CX
	ADDL  $2, CX
	ANDL  $-2, CX  // bit length rounded up to even
	SUBL  $2, CX
	MOVL  $1, R14
	SHLL  CX, R14
	MOVQ  n+24(FP), R10
	ADDQ  $15, R10
	SHRQ  $4, R10

tsel_step:
	LEAQ         (R12)(R14*1), R15 // candidates thr + 1, 2, 3 steps
	VPBROADCASTD R15, Z1
	LEAQ         (R15)(R14*1), BX
	VPBROADCASTD BX, Z2
	ADDQ         R14, BX
	VPBROADCASTD BX, Z3
	XORQ         R8, R8
	XORQ         R9, R9
	XORQ         R11, R11
	MOVQ         DI, SI
	MOVQ         R10, AX

tsel_count4:
	// 64 keys at a time: the four blocks' masks joined, one popcount
	// per candidate.
	CMPQ      AX, $4
	JLT       tsel_count1
	VMOVDQU32 0(SI), Z0
	VMOVDQU32 64(SI), Z8
	VMOVDQU32 128(SI), Z9
	VMOVDQU32 192(SI), Z10
	COUNT64(Z1, Z0, Z8, Z9, Z10, CX)
	POPCNTQ   CX, CX
	ADDQ      CX, R8
	COUNT64(Z2, Z0, Z8, Z9, Z10, CX)
	POPCNTQ   CX, CX
	ADDQ      CX, R9
	COUNT64(Z3, Z0, Z8, Z9, Z10, CX)
	POPCNTQ   CX, CX
	ADDQ      CX, R11
	ADDQ      $256, SI
	SUBQ      $4, AX
	JMP       tsel_count4

tsel_count1:
	TESTQ AX, AX
	JEQ   tsel_counted

tsel_count:
	VMOVDQU32 0(SI), Z0
	VPCMPUD   $5, Z1, Z0, K1
	VPCMPUD   $5, Z2, Z0, K2
	VPCMPUD   $5, Z3, Z0, K3
	KMOVW     K1, CX
	POPCNTL   CX, CX
	ADDQ      CX, R8
	KMOVW     K2, CX
	POPCNTL   CX, CX
	ADDQ      CX, R9
	KMOVW     K3, CX
	POPCNTL   CX, CX
	ADDQ      CX, R11
	ADDQ      $64, SI
	DECQ      AX
	JNZ       tsel_count

tsel_counted:
	// The largest candidate with at least k keys at or above it, if any
	// (the counts fall as the candidates rise).
	LEAQ    (R15)(R14*1), BX
	LEAQ    (BX)(R14*1), CX
	CMPQ    R8, DX
	CMOVQGE R15, R12
	CMOVQGE R8, R13
	CMPQ    R9, DX
	CMOVQGE BX, R12
	CMOVQGE R9, R13
	CMPQ    R11, DX
	CMOVQGE CX, R12
	CMOVQGE R11, R13
	CMPQ    R13, DX
	JEQ     tsel_done
	SHRL    $2, R14
	JNZ     tsel_step

tsel_done:
	MOVL R12, thr+40(FP)
	MOVQ R13, atLeast+48(FP)
	CMPQ R13, DX
	JNE  tsel_ties

tsel_mask:
	// Exactly k keys at or above thr: theirs are the kept columns (never
	// a padding zero's, as thr ≥ 1 here).
	VPBROADCASTD R12, Z1
	MOVQ         mask+16(FP), BX
	MOVQ         DI, SI

tsel_mask_loop:
	VMOVDQU32 0(SI), Z0
	VPCMPUD   $5, Z1, Z0, K1
	KMOVW     K1, 0(BX)
	ADDQ      $64, SI
	ADDQ      $2, BX
	DECQ      R10
	JNZ       tsel_mask_loop
	VZEROUPPER
	RET

tsel_ties:
	// More than k keys at or above thr: keep those above it and the
	// first k − above equal to it. R9 = above (padding zeros never are).
	VPBROADCASTD R12, Z1
	XORQ         R9, R9
	MOVQ         DI, SI
	MOVQ         R10, AX

tsel_above:
	VMOVDQU32 0(SI), Z0
	VPCMPUD   $6, Z1, Z0, K1
	KMOVW     K1, CX
	POPCNTL   CX, CX
	ADDQ      CX, R9
	ADDQ      $64, SI
	DECQ      AX
	JNZ       tsel_above
	MOVQ      DX, R11
	SUBQ      R9, R11 // ties still to keep
	MOVQ      mask+16(FP), BX
	MOVQ      DI, SI
	MOVQ      n+24(FP), R9 // columns left
	MOVQ      $-1, R15

tsel_tie_loop:
	MOVQ      $16, CX
	CMPQ      R9, CX
	CMOVQLT   R9, CX
	BZHIQ     CX, R15, AX
	KMOVW     AX, K4 // the block's columns
	VMOVDQU32 0(SI), Z0
	VPCMPUD   $6, Z1, Z0, K1
	VPCMPUD   $0, Z1, Z0, K4, K2
	KMOVW     K2, AX
	POPCNTL   AX, CX
	CMPQ      CX, R11
	JGT       tsel_tie_some
	SUBQ      CX, R11
	JMP       tsel_tie_put

tsel_tie_some:
	BZHIQ R11, R15, CX
	PDEPL AX, CX, AX // the first R11 equal keys
	XORQ  R11, R11

tsel_tie_put:
	KMOVW K1, CX
	ORL   CX, AX
	MOVW  AX, 0(BX)
	ADDQ  $64, SI
	ADDQ  $2, BX
	SUBQ  $16, R9
	DECQ  R10
	JNZ   tsel_tie_loop
	VZEROUPPER
	RET

tsel_nan:
	MOVL $0, thr+40(FP)
	MOVQ $-1, atLeast+48(FP)
	VZEROUPPER
	RET

tsel_zero:
	XORQ R12, R12
	MOVQ n+24(FP), R13
	MOVL R12, thr+40(FP)
	MOVQ R13, atLeast+48(FP)
	MOVQ R13, R10
	ADDQ $15, R10
	SHRQ $4, R10
	JMP  tsel_ties

tsel_one:
	MOVL $1, thr+40(FP)
	MOVQ DX, atLeast+48(FP)
	MOVL $1, R12
	MOVQ n+24(FP), R10
	ADDQ $15, R10
	SHRQ $4, R10
	JMP  tsel_mask

// func topkSelectPairAVX512(a, b *uint32, maskA, maskB *uint64, n, k int) bool
//
// topkSelectAVX512 for two rows of n ≤ 64 values at once (0 < k < n): the
// compares of one row's step fill the gaps in the other's chain of
// dependent steps. Both rows' keys stay in registers (Z20–Z23, Z24–Z27,
// zero past n). It reports false, writing nothing, unless both rows end
// with exactly k keys at or above their thresholds (not so with a NaN, at
// most k nonzero keys, or ties at a threshold); the caller then takes the
// rows one at a time.
TEXT ·topkSelectPairAVX512(SB), NOSPLIT, $0-49
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), DX

	// K1–K4: the valid lanes of the four blocks.
	MOVQ         $-1, AX
	BZHIQ        CX, AX, AX
	KMOVW        AX, K1
	SHRQ         $16, AX
	KMOVW        AX, K2
	SHRQ         $16, AX
	KMOVW        AX, K3
	SHRQ         $16, AX
	KMOVW        AX, K4
	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	VMOVDQU32.Z 0(SI), K1, Z20
	VMOVDQU32.Z 64(SI), K2, Z21
	VMOVDQU32.Z 128(SI), K3, Z22
	VMOVDQU32.Z 192(SI), K4, Z23
	VMOVDQU32.Z 0(DI), K1, Z24
	VMOVDQU32.Z 64(DI), K2, Z25
	VMOVDQU32.Z 128(DI), K3, Z26
	VMOVDQU32.Z 192(DI), K4, Z27
	VPANDD      Z31, Z20, Z20
	VPANDD      Z31, Z21, Z21
	VPANDD      Z31, Z22, Z22
	VPANDD      Z31, Z23, Z23
	VPANDD      Z31, Z24, Z24
	VPANDD      Z31, Z25, Z25
	VPANDD      Z31, Z26, Z26
	VPANDD      Z31, Z27, Z27

	// Each row needs more than k nonzero keys.
	VPTESTMD Z20, Z20, K1
	VPTESTMD Z21, Z21, K2
	VPTESTMD Z22, Z22, K3
	VPTESTMD Z23, Z23, K4
	KUNPCKWD K1, K2, K1
	KUNPCKWD K3, K4, K3
	KUNPCKDQ K1, K3, K1
	KMOVQ    K1, AX
	POPCNTQ  AX, AX
	CMPQ     AX, DX
	JLE      tpair_no
	VPTESTMD Z24, Z24, K1
	VPTESTMD Z25, Z25, K2
	VPTESTMD Z26, Z26, K3
	VPTESTMD Z27, Z27, K4
	KUNPCKWD K1, K2, K1
	KUNPCKWD K3, K4, K3
	KUNPCKDQ K1, K3, K1
	KMOVQ    K1, AX
	POPCNTQ  AX, AX
	CMPQ     AX, DX
	JLE      tpair_no

	// The largest key of both rows: a NaN sends the pair back.
	VPMAXUD       Z20, Z21, Z0
	VPMAXUD       Z22, Z23, Z1
	VPMAXUD       Z24, Z25, Z2
	VPMAXUD       Z26, Z27, Z3
	VPMAXUD       Z0, Z1, Z0
	VPMAXUD       Z2, Z3, Z2
	VPMAXUD       Z0, Z2, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXUD       Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPMAXUD       X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VPMAXUD       X1, X0, X0
	VPSHUFD       $0xb1, X0, X1
	VPMAXUD       X1, X0, X0
	VMOVD         X0, AX
	CMPL          AX, $0x7f800000
	JHI           tpair_no

	// R12, R13: row a's threshold and count at or above it; BX, SI row
	// b's; R14 the step's low bit, two bits settled a step from the
	// larger row's top bit; DX = k − 1, so that CMPQ DX, count sets the
	// carry when count ≥ k.
	XORQ R12, R12
	XORQ BX, BX
	MOVQ CX, R13
	MOVQ CX, SI
	BSRL AX, CX
	ADDL $2, CX
	ANDL $-2, CX
	SUBL $2, CX
	MOVL $1, R14
	SHLL CX, R14
	DECQ DX

tpair_step:
	LEAQ         (R12)(R14*1), R15
	VPBROADCASTD R15, Z1
	ADDQ         R14, R15
	VPBROADCASTD R15, Z2
	ADDQ         R14, R15
	VPBROADCASTD R15, Z3
	LEAQ         (BX)(R14*1), R15
	VPBROADCASTD R15, Z4
	ADDQ         R14, R15
	VPBROADCASTD R15, Z5
	ADDQ         R14, R15
	VPBROADCASTD R15, Z6
	COUNT64(Z1, Z20, Z21, Z22, Z23, R8)
	COUNT64(Z4, Z24, Z25, Z26, Z27, AX)
	COUNT64(Z2, Z20, Z21, Z22, Z23, R9)
	COUNT64(Z5, Z24, Z25, Z26, Z27, CX)
	COUNT64(Z3, Z20, Z21, Z22, Z23, R11)
	COUNT64(Z6, Z24, Z25, Z26, Z27, R10)
	POPCNTQ  R8, R8
	POPCNTQ  R9, R9
	POPCNTQ  R11, R11
	POPCNTQ  AX, AX
	POPCNTQ  CX, CX
	POPCNTQ  R10, R10

	// Row a: thr += (candidates with at least k) steps, and its count is
	// the smallest of those counts. Then row b.
	XORL    R15, R15
	CMPQ    DX, R8
	ADCQ    $0, R15
	CMPQ    DX, R9
	ADCQ    $0, R15
	CMPQ    DX, R11
	ADCQ    $0, R15
	IMULQ   R14, R15
	ADDQ    R15, R12
	CMPQ    R8, DX
	CMOVQGT R8, R13
	CMPQ    R9, DX
	CMOVQGT R9, R13
	CMPQ    R11, DX
	CMOVQGT R11, R13
	XORL    R15, R15
	CMPQ    DX, AX
	ADCQ    $0, R15
	CMPQ    DX, CX
	ADCQ    $0, R15
	CMPQ    DX, R10
	ADCQ    $0, R15
	IMULQ   R14, R15
	ADDQ    R15, BX
	CMPQ    AX, DX
	CMOVQGT AX, SI
	CMPQ    CX, DX
	CMOVQGT CX, SI
	CMPQ    R10, DX
	CMOVQGT R10, SI

	// Done when both counts are k (a row with exactly k keys at or above
	// its threshold keeps them however the other's search goes on).
	LEAQ -1(R13), AX
	LEAQ -1(SI), CX
	XORQ DX, AX
	XORQ DX, CX
	ORQ  CX, AX
	JZ   tpair_found
	SHRL $2, R14
	JNZ  tpair_step
	JMP  tpair_no // ties at a threshold

tpair_found:
	VPBROADCASTD R12, Z1
	VPBROADCASTD BX, Z4
	COUNT64(Z1, Z20, Z21, Z22, Z23, R8)
	COUNT64(Z4, Z24, Z25, Z26, Z27, R9)
	MOVQ         maskA+16(FP), AX
	MOVQ         R8, 0(AX)
	MOVQ         maskB+24(FP), AX
	MOVQ         R9, 0(AX)
	MOVB         $1, ret+48(FP)
	VZEROUPPER
	RET

tpair_no:
	MOVB $0, ret+48(FP)
	VZEROUPPER
	RET
