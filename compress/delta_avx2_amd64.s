//go:build !noasm && !amd64.v3

#include "textflag.h"

// AVX2 kernels of the delta codec's rows, twins of diffMinMax, the
// encodeCodes loops and applyDeltaRow in deltarow.go: the same operations
// in the same order per value (no fused multiply-add), 8 values at a time,
// a row's last partial block loaded under a mask and stored lane by lane.
// No BMI2: the codes are packed with variable shifts and ORs, which run at
// the same speed on every CPU with AVX2.

// deltaAVX2Tab: at 0, 24 dwords −1 ×8, 0 ×8, −1 ×8, so that the 8 dwords
// at 4·(8−t) mask a row's t last values in and those at 4·(16−t) mask
// them out; at 96, 128, 160 and 192 the shifts of 8 codes of 1, 2, 4 and
// 8 bits (k·bits); at 224 the scalars the kernels broadcast.
DATA deltaAVX2Tab<>+0(SB)/8, $-1
DATA deltaAVX2Tab<>+8(SB)/8, $-1
DATA deltaAVX2Tab<>+16(SB)/8, $-1
DATA deltaAVX2Tab<>+24(SB)/8, $-1
DATA deltaAVX2Tab<>+32(SB)/8, $0
DATA deltaAVX2Tab<>+40(SB)/8, $0
DATA deltaAVX2Tab<>+48(SB)/8, $0
DATA deltaAVX2Tab<>+56(SB)/8, $0
DATA deltaAVX2Tab<>+64(SB)/8, $-1
DATA deltaAVX2Tab<>+72(SB)/8, $-1
DATA deltaAVX2Tab<>+80(SB)/8, $-1
DATA deltaAVX2Tab<>+88(SB)/8, $-1
DATA deltaAVX2Tab<>+96(SB)/8, $0x0000000100000000
DATA deltaAVX2Tab<>+104(SB)/8, $0x0000000300000002
DATA deltaAVX2Tab<>+112(SB)/8, $0x0000000500000004
DATA deltaAVX2Tab<>+120(SB)/8, $0x0000000700000006
DATA deltaAVX2Tab<>+128(SB)/8, $0x0000000200000000
DATA deltaAVX2Tab<>+136(SB)/8, $0x0000000600000004
DATA deltaAVX2Tab<>+144(SB)/8, $0x0000000a00000008
DATA deltaAVX2Tab<>+152(SB)/8, $0x0000000e0000000c
DATA deltaAVX2Tab<>+160(SB)/8, $0x0000000400000000
DATA deltaAVX2Tab<>+168(SB)/8, $0x0000000c00000008
DATA deltaAVX2Tab<>+176(SB)/8, $0x0000001400000010
DATA deltaAVX2Tab<>+184(SB)/8, $0x0000001c00000018
DATA deltaAVX2Tab<>+192(SB)/8, $0
DATA deltaAVX2Tab<>+200(SB)/8, $0
DATA deltaAVX2Tab<>+208(SB)/8, $0
DATA deltaAVX2Tab<>+216(SB)/8, $0
DATA deltaAVX2Tab<>+224(SB)/4, $0x0000ffff  // a bfloat16's bits below a float32's
DATA deltaAVX2Tab<>+228(SB)/4, $0x7fffffff  // all but the sign
DATA deltaAVX2Tab<>+232(SB)/4, $0x7f800000  // the exponent; +Inf
DATA deltaAVX2Tab<>+236(SB)/4, $0x80000000  // the sign
DATA deltaAVX2Tab<>+240(SB)/4, $0x3f000000  // ½
DATA deltaAVX2Tab<>+244(SB)/4, $0x3f800000  // 1
DATA deltaAVX2Tab<>+248(SB)/4, $0xff800000  // −Inf
DATA deltaAVX2Tab<>+252(SB)/4, $0
GLOBL deltaAVX2Tab<>(SB), RODATA|NOPTR, $256

// deltaSetup sets, for nbits in R8 and width in R9: R11 the values of a
// row's last partial block (t), R10 its code bytes, Y15 the shifts of a
// block's codes, Y7 and Y6 t's masks in and out, and AX 2^nbits − 1. It
// clobbers CX.
#define deltaSetup \
	MOVQ         R9, R11                          \
	ANDQ         $7, R11                          \
	MOVQ         R11, R10                         \
	IMULQ        R8, R10                          \
	ADDQ         $7, R10                          \
	SHRQ         $3, R10                          \
	BSFQ         R8, CX                           \
	SHLQ         $5, CX                           \
	LEAQ         deltaAVX2Tab<>+96(SB), AX        \
	VMOVDQU      0(AX)(CX*1), Y15                 \
	MOVQ         $8, CX                           \
	SUBQ         R11, CX                          \
	LEAQ         deltaAVX2Tab<>+0(SB), AX         \
	VMOVDQU      0(AX)(CX*4), Y7                  \
	VMOVDQU      32(AX)(CX*4), Y6                 \
	MOVQ         R8, CX                           \
	MOVL         $1, AX                           \
	SHLL         CX, AX                           \
	DECL         AX

// bf16DownY sets out to bf16Down of each lane of in (their top halves,
// one further from 0 where a lane is negative, not NaN, and has low
// bits), with Y5 = 0, Y9 = 0xffff, Y10 = 0x7fffffff and Y11 = 0x7f800000
// in each lane; t1 and t2 are clobbered.
#define bf16DownY(in, out, t1, t2) \
	VPSRLD   $16, in, out \
	VPAND    Y9, in, t1   \
	VPCMPEQD Y5, t1, t1   \
	VPAND    Y10, in, t2  \
	VPCMPGTD Y11, t2, t2  \
	VPOR     t2, t1, t1   \
	VPSRAD   $31, in, t2  \
	VPANDN   t2, t1, t1   \
	VPSUBD   t1, out, out

// deltaCodesY codes the differences of the row's 8 values in Y0 and the
// reconstruction's in Y4 with Y8 qlo, Y9 inv, Y12 ½, Y13 top and Y14 1:
// Y1 q = (d − qlo)·inv + ½, Y2 min(q, top) truncated and Y3 the lanes
// whose q ≥ 1 (false for NaN).
#define deltaCodesY \
	VSUBPS     Y4, Y0, Y0         \
	VSUBPS     Y8, Y0, Y1         \
	VMULPS     Y9, Y1, Y1         \
	VADDPS     Y12, Y1, Y1        \
	VMINPS     Y13, Y1, Y2        \
	VCVTTPS2DQ Y2, Y2             \
	VCMPPS     $0x1d, Y14, Y1, Y3

// deltaLevelsY keeps Y2's codes in Y3's lanes (0 in the others) and adds
// their levels, Y10 dlo + code·Y11 dstep, to the reconstruction in Y4. It
// clobbers Y5.
#define deltaLevelsY \
	VPAND     Y3, Y2, Y2  \
	VCVTDQ2PS Y2, Y5      \
	VMULPS    Y11, Y5, Y5 \
	VADDPS    Y5, Y10, Y5 \
	VADDPS    Y5, Y4, Y4

// orCodes leaves in AX the OR of Y2's codes, each shifted left by its
// lane's Y15 shift. It clobbers Y3 and Y5.
#define orCodes \
	VPSLLVD      Y15, Y2, Y3 \
	VEXTRACTI128 $1, Y3, X5  \
	VPOR         X5, X3, X3  \
	VPSHUFD      $0x4e, X3, X5 \
	VPOR         X5, X3, X3  \
	VPSHUFD      $0xb1, X3, X5 \
	VPOR         X5, X3, X3  \
	VMOVD        X3, AX

// byteCodes leaves Y2's 8 codes as bytes in X5. It clobbers Y5.
#define byteCodes \
	VEXTRACTI128 $1, Y2, X5     \
	VPACKUSDW    X5, X2, X5     \
	VPACKUSWB    X5, X5, X5

// encodeBlock codes the 8 values at SI against the reconstruction at DX
// and writes the reconstruction back (deltaCodesY). It prefetches the same
// columns 16 rows on (the next group but one), so that the codes of one
// group overlap the loads of the groups after it: 124,000 rows from
// memory were coded 1.2x faster so (0.99-1.35x at widths 32-128, timed in
// alternation on one core of a loaded Zen 3).
#define encodeBlock \
	MOVQ       240(SP), AX    \
	PREFETCHT0 (SI)(AX*1)     \
	PREFETCHT0 (DX)(AX*1)     \
	VMOVUPS (SI), Y0          \
	VMOVUPS (DX), Y4          \
	deltaCodesY               \
	deltaLevelsY              \
	VMOVUPS Y4, (DX)

#define nextBlock(codeBytes) \
	ADDQ $32, SI         \
	ADDQ $32, DX         \
	ADDQ $codeBytes, DI  \
	SUBQ $8, CX

// func deltaEncodeRowsAVX2(dst *byte, x, rec *float32, rows, width, nbits int)
//
// Every row of x: its difference against rec, header and codes
// (rowBytes(nbits, width) bytes at dst, one row after another), and rec
// updated to what the codes decode to. Rows go 8 at a time: each row's
// minimum and maximum, then the 8 headers at once (deltaRowHeader in
// vector form: the same operations on each lane), then each row's codes.
//
// The frame: 8 rows' lo at 0, hi at 32, qlo at 64, inv at 96, dlo at 128,
// dstep at 160 and headers at 192; the group's rows at 224, the row at
// 232 and 16 rows' bytes, the prefetch distance, at 240.
TEXT ·deltaEncodeRowsAVX2(SB), NOSPLIT, $248-48
	MOVQ         nbits+40(FP), R8
	MOVQ         width+32(FP), R9
	deltaSetup
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	VCVTDQ2PS    Y13, Y13             // top (levels)
	VBROADCASTSS deltaAVX2Tab<>+240(SB), Y12 // ½
	VBROADCASTSS deltaAVX2Tab<>+244(SB), Y14 // 1
	MOVQ         dst+0(FP), BX
	MOVQ         x+8(FP), R13
	MOVQ         rec+16(FP), R14
	MOVQ         rows+24(FP), R12
	MOVQ         R9, AX
	SHLQ         $6, AX
	MOVQ         AX, 240(SP)             // 16 rows

de_group:
	TESTQ   R12, R12
	JEQ     de_done
	MOVQ    $8, AX
	CMPQ    R12, AX
	CMOVQLT R12, AX
	MOVQ    AX, 224(SP)               // the group's rows
	MOVQ    $0, 232(SP)
	MOVQ    R13, SI
	MOVQ    R14, DX

	// Each row's minimum and maximum (NaNs left out, ±Inf if none) to
	// lo and hi.
de_minmax:
	VBROADCASTSS deltaAVX2Tab<>+232(SB), Y0 // lo: +Inf
	VBROADCASTSS deltaAVX2Tab<>+248(SB), Y1 // hi: −Inf
	MOVQ         R9, CX

de_mm_loop:
	CMPQ    CX, $8
	JLT     de_mm_tail
	VMOVUPS (SI), Y4
	VSUBPS  (DX), Y4, Y4              // row − rec
	VMINPS  Y0, Y4, Y0                // a NaN in Y4 keeps Y0, as d < lo is false
	VMAXPS  Y1, Y4, Y1
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     de_mm_loop

de_mm_tail:
	TESTQ      CX, CX
	JEQ        de_mm_reduce
	VMASKMOVPS (SI), Y7, Y4
	VMASKMOVPS (DX), Y7, Y5
	VSUBPS     Y5, Y4, Y4
	VORPS      Y6, Y4, Y4             // NaN in the lanes past the row
	VMINPS     Y0, Y4, Y0
	VMAXPS     Y1, Y4, Y1
	LEAQ       (SI)(CX*4), SI
	LEAQ       (DX)(CX*4), DX

de_mm_reduce:
	VEXTRACTF128 $1, Y0, X2
	VEXTRACTF128 $1, Y1, X3
	VMINPS       X2, X0, X0
	VMAXPS       X3, X1, X1
	VPERMILPS    $0x4e, X0, X2
	VPERMILPS    $0x4e, X1, X3
	VMINPS       X2, X0, X0
	VMAXPS       X3, X1, X1
	VPERMILPS    $0xb1, X0, X2
	VPERMILPS    $0xb1, X1, X3
	VMINPS       X2, X0, X0
	VMAXPS       X3, X1, X1
	MOVQ         232(SP), AX
	VMOVSS       X0, 0(SP)(AX*4)
	VMOVSS       X1, 32(SP)(AX*4)
	INCQ         AX
	MOVQ         AX, 232(SP)
	CMPQ         AX, 224(SP)
	JLT          de_minmax

	// The headers (deltaRowHeader): Y1 qlo, Y7 inv, Y0 dlo, Y2 dstep, Y3
	// the header (lo16, step16 above it).
	VPXOR        Y5, Y5, Y5
	VPBROADCASTD deltaAVX2Tab<>+224(SB), Y9
	VPBROADCASTD deltaAVX2Tab<>+228(SB), Y10
	VPBROADCASTD deltaAVX2Tab<>+232(SB), Y11
	VPBROADCASTD deltaAVX2Tab<>+236(SB), Y8
	VMOVUPS      0(SP), Y1
	VMOVUPS      32(SP), Y2
	VADDPS       Y5, Y1, Y1           // lo + 0, hi + 0: −0 becomes +0
	VADDPS       Y5, Y2, Y2
	bf16DownY(Y1, Y3, Y0, Y4)         // lo16
	VPSLLD       $16, Y3, Y1          // qlo
	VSUBPS       Y1, Y2, Y2           // hi − qlo
	VDIVPS       Y13, Y2, Y2          // ÷ levels
	VXORPS       Y8, Y2, Y2           // −
	bf16DownY(Y2, Y4, Y0, Y6)
	VPSLLD       $16, Y4, Y6
	VPXOR        Y8, Y6, Y6           // step = bf16Up, a bfloat16
	VPSRLD       $16, Y6, Y4          // step16
	VDIVPS       Y6, Y14, Y7          // inv = 1/step
	VPAND        Y11, Y1, Y0
	VPCMPEQD     Y11, Y0, Y0          // qlo not finite
	VPAND        Y11, Y6, Y2
	VPCMPEQD     Y11, Y2, Y2          // step not finite
	VPOR         Y2, Y0, Y0
	VCMPPS       $0x11, Y5, Y6, Y2    // step < 0
	VPOR         Y2, Y0, Y0
	VCMPPS       $0x1e, Y5, Y6, Y2    // step > 0
	VPAND        Y11, Y7, Y9
	VPCMPEQD     Y11, Y9, Y9          // inv not finite
	VPAND        Y9, Y2, Y2
	VPOR         Y2, Y0, Y0           // those send zeros
	VPANDN       Y3, Y0, Y3
	VPANDN       Y4, Y0, Y4
	VPCMPEQD     Y5, Y4, Y2
	VPANDN       Y7, Y2, Y7           // step16 0: every code 0
	VPSLLD       $16, Y3, Y0          // dlo
	VPSLLD       $16, Y4, Y2          // dstep
	VPOR         Y3, Y2, Y3           // the header
	VMOVUPS      Y1, 64(SP)
	VMOVUPS      Y7, 96(SP)
	VMOVUPS      Y0, 128(SP)
	VMOVUPS      Y2, 160(SP)
	VMOVUPS      Y3, 192(SP)
	MOVQ         $8, CX
	SUBQ         R11, CX
	LEAQ         deltaAVX2Tab<>+0(SB), AX
	VMOVDQU      0(AX)(CX*4), Y7      // the tail's mask again

	// Each row's header and codes.
	MOVQ R13, SI
	MOVQ R14, DX
	MOVQ BX, DI
	MOVQ $0, 232(SP)

de_row:
	MOVQ         232(SP), AX
	VBROADCASTSS 64(SP)(AX*4), Y8     // qlo
	VBROADCASTSS 96(SP)(AX*4), Y9     // inv
	VBROADCASTSS 128(SP)(AX*4), Y10   // dlo
	VBROADCASTSS 160(SP)(AX*4), Y11   // dstep
	MOVL         192(SP)(AX*4), AX
	MOVL         AX, (DI)
	ADDQ         $4, DI
	MOVQ         R9, CX
	CMPQ         R8, $2
	JEQ          de_codes2
	CMPQ         R8, $1
	JEQ          de_codes1
	CMPQ         R8, $4
	JEQ          de_codes4

de_codes8:
	CMPQ      CX, $8
	JLT       de_tail
	encodeBlock
	byteCodes
	VMOVQ     X5, (DI)
	nextBlock(8)
	JMP       de_codes8

de_codes4:
	CMPQ CX, $8
	JLT  de_tail
	encodeBlock
	orCodes
	MOVL AX, (DI)
	nextBlock(4)
	JMP  de_codes4

de_codes2:
	CMPQ CX, $8
	JLT  de_tail
	encodeBlock
	orCodes
	MOVW AX, (DI)
	nextBlock(2)
	JMP  de_codes2

de_codes1:
	CMPQ      CX, $8
	JLT       de_tail
	encodeBlock
	VMOVMSKPS Y3, AX                  // 1-bit codes are q ≥ 1
	MOVB      AX, (DI)
	nextBlock(1)
	JMP       de_codes1

	// The row's last CX < 8 values: loaded under Y7's mask, stored lane
	// by lane, their codes' R10 bytes one at a time.
de_tail:
	TESTQ      CX, CX
	JEQ        de_row_done
	VMASKMOVPS (SI), Y7, Y0
	VMASKMOVPS (DX), Y7, Y4
	deltaCodesY
	VPAND      Y7, Y3, Y3             // no codes past the row
	deltaLevelsY
	MOVQ       DX, AX
	TESTQ      $4, CX
	JEQ        de_tail2
	VMOVUPS    X4, (AX)
	VEXTRACTF128 $1, Y4, X4
	ADDQ       $16, AX

de_tail2:
	TESTQ   $2, CX
	JEQ     de_tail1
	VMOVQ   X4, (AX)
	VPSRLDQ $8, X4, X4
	ADDQ    $8, AX

de_tail1:
	TESTQ  $1, CX
	JEQ    de_tail_codes
	VMOVSS X4, (AX)

de_tail_codes:
	LEAQ      (SI)(CX*4), SI
	LEAQ      (DX)(CX*4), DX
	CMPQ      R8, $1
	JNE       de_tail_not1
	VMOVMSKPS Y3, AX
	JMP       de_tail_store

de_tail_not1:
	CMPQ  R8, $8
	JNE   de_tail_or
	byteCodes
	VMOVQ X5, AX
	JMP   de_tail_store

de_tail_or:
	orCodes

de_tail_store:
	MOVQ R10, CX

de_tail_byte:
	MOVB AX, (DI)
	SHRQ $8, AX
	INCQ DI
	DECQ CX
	JNE  de_tail_byte

de_row_done:
	MOVQ 232(SP), AX
	INCQ AX
	MOVQ AX, 232(SP)
	CMPQ AX, 224(SP)
	JLT  de_row
	MOVQ 224(SP), AX
	SUBQ AX, R12
	MOVQ SI, R13
	MOVQ DX, R14
	MOVQ DI, BX
	MOVQ $8, CX
	SUBQ R11, CX
	LEAQ deltaAVX2Tab<>+0(SB), AX
	VMOVDQU 32(AX)(CX*4), Y6          // the mask out again
	JMP  de_group

de_done:
	VZEROUPPER
	RET

// applyLevels adds the levels of Y2's codes (Y12 dlo + code·Y13 dstep) to
// the reconstruction in Y4.
#define applyLevels \
	VCVTDQ2PS Y2, Y3  \
	VMULPS    Y13, Y3, Y3 \
	VADDPS    Y3, Y12, Y3 \
	VADDPS    Y3, Y4, Y4

// applyBlock adds the levels of Y2's codes to the 8 values at DX and
// writes them there and DI bytes on. (Prefetching as encodeBlock does
// gained nothing measurable: 0.73-1.13x.)
#define applyBlock \
	VMOVUPS (DX), Y4       \
	applyLevels            \
	VMOVUPS Y4, (DX)       \
	VMOVUPS Y4, (DX)(DI*1) \
	ADDQ    $32, DX        \
	SUBQ    $8, CX

// unpackCodes leaves Y2's codes, shifted right by Y15's shifts, under the
// mask in Y14.
#define unpackCodes \
	VPSRLVD Y15, Y2, Y2 \
	VPAND   Y14, Y2, Y2

// func deltaApplyRowsAVX2(rec, out *float32, src *byte, rows, width, nbits int)
//
// Adds each of rows rows' decoded difference (header and codes,
// rowBytes(nbits, width) bytes each, one after another at src) to rec's
// rows and writes the sums to out's too.
TEXT ·deltaApplyRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ         nbits+40(FP), R8
	MOVQ         width+32(FP), R9
	deltaSetup
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14             // the codes' mask
	MOVQ         out+8(FP), DI
	MOVQ         rec+0(FP), DX
	SUBQ         DX, DI               // out − rec, in bytes
	MOVQ         src+16(FP), SI
	MOVQ         rows+24(FP), R12

da_row:
	TESTQ        R12, R12
	JEQ          da_done
	MOVWLZX      0(SI), AX
	SHLL         $16, AX
	VMOVD        AX, X12
	VBROADCASTSS X12, Y12             // dlo
	MOVWLZX      2(SI), AX
	SHLL         $16, AX
	VMOVD        AX, X13
	VBROADCASTSS X13, Y13             // dstep
	ADDQ         $4, SI
	MOVQ         R9, CX
	CMPQ         R8, $2
	JEQ          da_codes2
	CMPQ         R8, $1
	JEQ          da_codes1
	CMPQ         R8, $4
	JEQ          da_codes4

da_codes8:
	CMPQ      CX, $8
	JLT       da_tail
	VPMOVZXBD (SI), Y2
	applyBlock
	ADDQ      $8, SI
	JMP       da_codes8

da_codes4:
	CMPQ         CX, $8
	JLT          da_tail
	VPBROADCASTD (SI), Y2
	unpackCodes
	applyBlock
	ADDQ         $4, SI
	JMP          da_codes4

da_codes2:
	CMPQ         CX, $8
	JLT          da_tail
	VPBROADCASTW (SI), Y2
	unpackCodes
	applyBlock
	ADDQ         $2, SI
	JMP          da_codes2

da_codes1:
	CMPQ         CX, $8
	JLT          da_tail
	VPBROADCASTB (SI), Y2
	unpackCodes
	applyBlock
	INCQ         SI
	JMP          da_codes1

	// The row's last CX < 8 values: their codes' R10 bytes read one at a
	// time, the reconstruction loaded under Y7's mask and stored lane by
	// lane.
da_tail:
	TESTQ CX, CX
	JEQ   da_row_done
	MOVQ  R10, BX
	XORL  AX, AX

da_tail_byte:
	SHLQ  $8, AX
	MOVB  -1(SI)(BX*1), AX
	DECQ  BX
	JNE   da_tail_byte
	ADDQ  R10, SI
	VMOVQ AX, X2
	CMPQ  R8, $8
	JEQ   da_tail8
	VPBROADCASTD X2, Y2
	unpackCodes
	JMP   da_tail_add

da_tail8:
	VPMOVZXBD X2, Y2

da_tail_add:
	VMASKMOVPS (DX), Y7, Y4
	applyLevels
	MOVQ       DX, AX
	TESTQ      $4, CX
	JEQ        da_tail2
	VMOVUPS    X4, (AX)
	VMOVUPS    X4, (AX)(DI*1)
	VEXTRACTF128 $1, Y4, X4
	ADDQ       $16, AX

da_tail2:
	TESTQ   $2, CX
	JEQ     da_tail1
	VMOVQ   X4, (AX)
	VMOVQ   X4, (AX)(DI*1)
	VPSRLDQ $8, X4, X4
	ADDQ    $8, AX

da_tail1:
	TESTQ  $1, CX
	JEQ    da_tail_done
	VMOVSS X4, (AX)
	VMOVSS X4, (AX)(DI*1)

da_tail_done:
	LEAQ (DX)(CX*4), DX

da_row_done:
	DECQ R12
	JMP  da_row

da_done:
	VZEROUPPER
	RET
