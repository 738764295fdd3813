//go:build !noasm && !amd64.v3

#include "textflag.h"

// AVX-512 (F, BW) + BMI2 kernels of the delta codec's rows, twins of
// diffMinMax, the encodeCodes loops and applyDeltaRow in deltarow.go: the
// same operations in the same order per value (no fused multiply-add), 16
// values at a time, the last partial block under a mask. As the Go loops
// do, a row's whole blocks of codes of up to 4 bits take their levels
// from a table of the row's levels (lo + k·step, each rounded as the
// per-value products and sums would be), by a permute (VPERMPS); the
// encoder clamps q to [0, top] (a NaN to 0) before truncating it, which
// makes the codes of q < 1 zero as deltaCode's test does, and packs 2-bit
// codes by multiply-adds. Encoding a worker's messages on the synthetic
// graph (123,000 rows of 64) took 0.89x the CPU time so, and messages of
// 256 rows, which stay in cache, 0.86x (61 rounds in alternation, minima).

// deltaPrefetch: the kernels stream the reconstruction, which a message
// of many rows reads from memory. The decoder prefetches it 2 KiB ahead
// of where it reads, across the 4 KiB pages the hardware's prefetcher
// stops at: a worker's messages on the synthetic ogbn-arxiv-sized graph
// (3 of 41,000 rows of 64) were decoded 1.07-1.09x faster so (two runs of
// 24 rounds timed in alternation, medians, on a loaded Xeon with AVX-512;
// 512 B, 1 KiB and 4 KiB ahead gained less). The encoder reads a group of
// 16 rows twice, for their minima and maxima and then for their codes; it
// prefetches the next group's rows and reconstruction as it codes one,
// as the AVX2 kernel does, and codes whole blocks inline. With both, the
// same messages were encoded 1.18x faster, and messages of 2,000 rows,
// which stay in cache, 1.19x (40 rounds in alternation, CPU time).

// deltaPack2 multiplies 2-bit codes into place: bytes 1, 4, then words
// 1, 16.
DATA deltaPack2<>+0(SB)/8, $0x0401040104010401
DATA deltaPack2<>+8(SB)/8, $0x0401040104010401
DATA deltaPack2<>+16(SB)/8, $0x0010000100100001
DATA deltaPack2<>+24(SB)/8, $0x0010000100100001
GLOBL deltaPack2<>(SB), RODATA|NOPTR, $32

// deltaIota is 0, 1, …, 15 as float32s: the codes of a row's levels.
DATA deltaIota<>+0(SB)/8, $0x3f80000000000000
DATA deltaIota<>+8(SB)/8, $0x4040000040000000
DATA deltaIota<>+16(SB)/8, $0x40a0000040800000
DATA deltaIota<>+24(SB)/8, $0x40e0000040c00000
DATA deltaIota<>+32(SB)/8, $0x4110000041000000
DATA deltaIota<>+40(SB)/8, $0x4130000041200000
DATA deltaIota<>+48(SB)/8, $0x4150000041400000
DATA deltaIota<>+56(SB)/8, $0x4170000041600000
GLOBL deltaIota<>(SB), RODATA|NOPTR, $64

// deltaDiffMinMax leaves the minimum and maximum of the CX values of the
// row at SI less those of the reconstruction at DX, NaNs left out (±Inf
// if none), in X0 and X1. It advances SI and DX and clobbers AX, CX, K1,
// Z0–Z5.
TEXT deltaDiffMinMax<>(SB), NOSPLIT|NOFRAME, $0-0
	MOVL         $0x7f800000, AX
	VPBROADCASTD AX, Z0            // lo: +Inf
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z1            // hi: −Inf

dmm_loop2:
	CMPQ       CX, $32
	JLT        dmm_loop
	PREFETCHT0 2048(DX)            // the reconstruction, 2 KiB on (see deltaPrefetch)
	PREFETCHT0 2112(DX)
	VMOVUPS    0(SI), Z4
	VMOVUPS    64(SI), Z5
	VSUBPS     0(DX), Z4, Z4       // row − rec
	VSUBPS     64(DX), Z5, Z5
	VMINPS     Z0, Z4, Z0          // a NaN in Z4 keeps Z0, as v < lo is false
	VMAXPS     Z1, Z4, Z1
	VMINPS     Z0, Z5, Z0
	VMAXPS     Z1, Z5, Z1
	ADDQ       $128, SI
	ADDQ       $128, DX
	SUBQ       $32, CX
	JMP        dmm_loop2

dmm_loop:
	CMPQ       CX, $16
	JLT        dmm_tail
	PREFETCHT0 2048(DX)
	VMOVUPS    0(SI), Z4
	VSUBPS     0(DX), Z4, Z4
	VMINPS     Z0, Z4, Z0
	VMAXPS     Z1, Z4, Z1
	ADDQ       $64, SI
	ADDQ       $64, DX
	SUBQ       $16, CX

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

// bf16DownZ sets out to bf16Down of each lane of in (their top halves,
// one further from 0 where a lane is negative, not NaN, and has low
// bits), with Z26 = 0xffff, Z27 = 0x7fffffff, Z28 = 0x7f800000 and Z29 =
// 1 in each lane. It clobbers Z6, K6 and K7.
#define bf16DownZ(in, out) \
	VPSRLD   $16, in, out          \
	VPTESTMD Z26, in, K6           \
	VPMOVD2M in, K7                \
	KANDW    K6, K7, K6            \
	VPANDD   Z27, in, Z6           \
	VPCMPUD  $2, Z28, Z6, K6, K6   \
	VPADDD   Z29, out, K6, out

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
// Every row of x: its difference against rec, header and codes
// (rowBytes(nbits, width) bytes at dst, one row after another), and rec
// updated to what the codes decode to. Rows go 16 at a time: each row's
// minimum and maximum, then the 16 headers at once (deltaRowHeader in
// vector form: the same operations on each lane), then each row's codes,
// the even rows before the odd ones, so that no row's loads meet the
// masked stores of the row just before it (they would wait for them to
// reach the cache). R15 holds a group's values in bytes, for prefetching
// the next group (see deltaPrefetch).
TEXT ·deltaEncodeRowsAVX512(SB), NOSPLIT, $24-48
	MOVQ         nbits+40(FP), R8
	deltaMasks
	VPBROADCASTD AX, Z14
	VCVTDQ2PS    Z14, Z14             // top (levels)
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z15              // 1
	MOVL         $0x3f000000, AX
	VPBROADCASTD AX, Z16              // ½
	MOVQ         $-1, AX
	BZHIQ        R10, AX, BX
	KMOVQ        BX, K4               // a whole block's bytes
	KXNORW       K5, K5, K5           // a whole block's values
	MOVL         $0xffff, AX
	VPBROADCASTD AX, Z26
	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z27
	MOVL         $0x7f800000, AX
	VPBROADCASTD AX, Z28
	MOVL         $1, AX
	VPBROADCASTD AX, Z29
	MOVL         $0x80000000, AX
	VPBROADCASTD AX, Z30
	MOVL         $0x8000, AX
	VPBROADCASTD AX, Z31
	MOVL         $0x7fff, AX
	VPBROADCASTD AX, Z17
	VPXORD       Z7, Z7, Z7           // 0
	MOVQ         width+32(FP), CX
	IMULQ        R8, CX
	ADDQ         $7, CX
	SHRQ         $3, CX
	ADDQ         $4, CX
	MOVQ         CX, rb-24(SP)        // a row's bytes
	MOVQ         x+8(FP), R13
	MOVQ         rec+16(FP), R14
	MOVQ         rows+24(FP), R12
	MOVQ         width+32(FP), R15
	SHLQ         $6, R15              // a group's values, in bytes: 16 rows on

der_group:
	TESTQ   R12, R12
	JEQ     der_done
	MOVQ    $16, AX
	CMPQ    R12, AX
	CMOVQLT R12, AX
	MOVQ    AX, grp-8(SP)             // the group's rows
	VMOVAPS Z7, Z20
	VMOVAPS Z7, Z21
	MOVQ    $0, r-16(SP)

	// Each row's minimum and maximum to its lane of Z20 and Z21.
der_minmax:
	MOVQ         r-16(SP), AX
	CMPQ         AX, grp-8(SP)
	JGE          der_heads
	MOVQ         width+32(FP), CX
	IMULQ        CX, AX
	LEAQ         0(R13)(AX*4), SI
	LEAQ         0(R14)(AX*4), DX
	CALL         deltaDiffMinMax<>(SB)
	MOVQ         r-16(SP), CX
	MOVL         $1, AX
	SHLXQ        CX, AX, AX
	KMOVW        AX, K1
	VBROADCASTSS X0, K1, Z20
	VBROADCASTSS X1, K1, Z21
	INCQ         r-16(SP)
	JMP          der_minmax

	// The headers: Z22 lo16, Z23 qlo, Z25 step16, Z19 inv, Z24 dlo, Z18
	// dstep, Z9 the header (lo16, step16 above it).
der_heads:
	VADDPS    Z7, Z20, Z20            // lo + 0, hi + 0: −0 becomes +0
	VADDPS    Z7, Z21, Z21
	bf16DownZ(Z20, Z22)
	VPSLLD    $16, Z22, Z23           // qlo
	VSUBPS    Z23, Z21, Z8            // hi − qlo
	VDIVPS    Z14, Z8, Z8             // ÷ levels
	VPXORD    Z30, Z8, Z8             // −
	bf16DownZ(Z8, Z25)
	VPXORD    Z31, Z25, Z25           // step16 = bf16Up
	VPSLLD    $16, Z25, Z8            // step
	VDIVPS    Z8, Z15, Z19            // inv = 1/step
	VPANDD    Z28, Z23, Z6
	VPCMPEQD  Z28, Z6, K1             // qlo not finite
	VPANDD    Z28, Z8, Z6
	VPCMPEQD  Z28, Z6, K2             // step not finite
	KORW      K2, K1, K1
	VPTESTMD  Z17, Z25, K2            // step ≠ ±0
	VPTESTMD  Z31, Z25, K2, K3        // step < 0
	KORW      K3, K1, K1
	KANDNW    K2, K3, K3              // step > 0
	VPANDD    Z28, Z19, Z6
	VPCMPEQD  Z28, Z6, K3, K2         // step > 0 and inv not finite
	KORW      K2, K1, K1
	VMOVDQA32 Z7, K1, Z22             // those send zeros
	VMOVDQA32 Z7, K1, Z25
	VPTESTNMD Z25, Z25, K2
	VMOVAPS   Z7, K2, Z19             // step16 0: every code 0
	VPSLLD    $16, Z22, Z24           // dlo
	VPSLLD    $16, Z25, Z18           // dstep
	VPORD     Z22, Z18, Z9            // the header

	// Each row's header and codes, even rows then odd.
	MOVQ $0, r-16(SP)

der_row:
	MOVQ r-16(SP), AX
	CMPQ AX, grp-8(SP)
	JLT  der_codes
	TESTQ $1, AX
	JNE  der_group_done
	MOVQ $1, r-16(SP)                 // the odd rows
	MOVQ $1, AX
	CMPQ AX, grp-8(SP)
	JGE  der_group_done

der_codes:
	VPBROADCASTD AX, Z6
	VPERMPS      Z23, Z6, Z10
	VPERMPS      Z19, Z6, Z11
	VPERMPS      Z24, Z6, Z12
	VPERMPS      Z18, Z6, Z13
	VPERMD       Z9, Z6, Z8
	MOVQ         AX, BX
	IMULQ        rb-24(SP), BX
	MOVQ         dst+0(FP), DI
	ADDQ         BX, DI
	VMOVD        X8, BX
	MOVL         BX, 0(DI)
	ADDQ         $4, DI
	MOVQ         width+32(FP), CX
	CMPQ         CX, $16
	JLT          der_no_table         // no whole block
	VMULPS       deltaIota<>(SB), Z13, Z20
	VADDPS       Z20, Z12, Z20        // the levels dlo + k·dstep, k < 16

der_no_table:
	IMULQ        CX, AX
	LEAQ         0(R13)(AX*4), SI
	LEAQ         0(R14)(AX*4), DX

	// Whole blocks: deltaCodesBlock with every lane and byte, inline.
dc_loop:
	CMPQ        CX, $16
	JLT         dc_tail
	PREFETCHT0  (DX)(R15*1)           // the next group's (see deltaPrefetch)
	PREFETCHT0  (SI)(R15*1)
	VMOVUPS     0(SI), Z0
	VMOVUPS     0(DX), Z4
	VSUBPS      Z4, Z0, Z0            // d = row − rec
	VSUBPS      Z10, Z0, Z1           // d − qlo
	VMULPS      Z11, Z1, Z1           // ·inv
	VADDPS      Z16, Z1, Z1           // + ½: q ≥ ½ or NaN, as d ≥ qlo
	VMAXPS      Z7, Z1, Z2            // NaN: 0 (the second operand)
	VMINPS      Z14, Z2, Z2           // min(q, top)
	VCVTTPS2DQ  Z2, Z2                // the codes: 0 for q < 1
	CMPQ        R8, $8
	JEQ         dc_levels8
	VPERMPS     Z20, Z2, Z3           // the level of each code

dc_level:
	VADDPS      Z3, Z4, Z4            // rec + level
	VMOVUPS     Z4, 0(DX)
	VPMOVDB     Z2, X5
	CMPQ        R8, $2
	JEQ         dc_pack2
	CMPQ        R8, $8
	JEQ         dc_store
	VMOVQ       X5, AX
	VPEXTRQ     $1, X5, BX
	PEXTQ       R9, AX, AX
	PEXTQ       R9, BX, BX
	SHLXQ       R11, BX, BX
	ORQ         BX, AX
	VMOVQ       AX, X5

dc_store:
	VMOVDQU8 X5, K4, 0(DI)

dc_next:
	ADDQ     $64, SI
	ADDQ     $64, DX
	ADDQ     R10, DI
	SUBQ     $16, CX
	JMP      dc_loop

	// 8-bit codes: more levels than a vector holds.
dc_levels8:
	VCVTDQ2PS Z2, Z3
	VMULPS    Z13, Z3, Z3             // code·dstep
	VADDPS    Z3, Z12, Z3             // dlo + code·dstep
	JMP       dc_level

	// 2-bit codes, four to a byte, by multiply-adds: c0 + 4·c1 in each
	// word, then + 16·(c2 + 4·c3) in each dword, narrowed to bytes.
dc_pack2:
	VPMADDUBSW deltaPack2<>+0(SB), X5, X5
	VPMADDWD   deltaPack2<>+16(SB), X5, X5
	VPMOVDB    X5, X5
	VMOVD      X5, 0(DI)
	JMP        dc_next

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

dc_row_done:
	ADDQ $2, r-16(SP)
	JMP  der_row

der_group_done:
	MOVQ  grp-8(SP), AX
	SUBQ  AX, R12
	MOVQ  width+32(FP), CX
	IMULQ AX, CX
	LEAQ  0(R13)(CX*4), R13
	LEAQ  0(R14)(CX*4), R14
	IMULQ rb-24(SP), AX
	ADDQ  AX, dst+0(FP)
	JMP   der_group

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

// func deltaApplyRowsAVX512(rec, out *float32, src *byte, rows, width, nbits, stream int)
//
// Adds each of rows rows' decoded difference (header and codes,
// rowBytes(nbits, width) bytes each, one after another at src) to rec's
// rows and writes the sums to out's too. Rows whose width has a partial
// block go the even rows before the odd ones (see
// deltaEncodeRowsAVX512), others in order. With stream set and out apart
// from rec, the whole blocks of out that start on a 64-byte line are
// written with non-temporal stores, which skip reading the line into the
// cache first (see deltaStreamOut).
TEXT ·deltaApplyRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ         out+8(FP), DI
	SUBQ         rec+0(FP), DI        // out − rec, in bytes
	MOVQ         rows+24(FP), R12
	MOVQ         nbits+40(FP), R8
	deltaMasks
	MOVQ         $-1, AX
	BZHIQ        R10, AX, BX
	KMOVQ        BX, K4
	KXNORW       K5, K5, K5
	MOVQ         width+32(FP), CX
	IMULQ        R8, CX
	ADDQ         $7, CX
	SHRQ         $3, CX
	ADDQ         $4, CX
	MOVQ         CX, R14              // a row's bytes
	XORQ         R13, R13             // the row
	MOVQ         $-1, R15             // no out address has its bits clear: cached stores
	MOVQ         stream+48(FP), AX
	TESTQ        AX, AX
	JEQ          da_row
	TESTQ        DI, DI
	JEQ          da_row
	MOVQ         $63, R15             // streamed: the 64-byte-aligned blocks

da_row:
	CMPQ  R13, R12
	JLT   da_go
	MOVQ  width+32(FP), AX
	TESTQ $15, AX                     // whole blocks only: the rows went in order
	JEQ   da_done
	TESTQ $1, R13
	JNE   da_done
	MOVQ  $1, R13                     // the odd rows
	CMPQ  R13, R12
	JGE   da_done

da_go:
	MOVQ         R13, SI
	IMULQ        R14, SI
	ADDQ         src+16(FP), SI
	MOVQ         width+32(FP), CX
	MOVQ         R13, DX
	IMULQ        CX, DX
	SHLQ         $2, DX
	ADDQ         rec+0(FP), DX
	MOVWLZX      0(SI), AX
	SHLL         $16, AX
	VMOVD        AX, X12
	VBROADCASTSS X12, Z12             // dlo
	MOVWLZX      2(SI), AX
	SHLL         $16, AX
	VMOVD        AX, X13
	VBROADCASTSS X13, Z13             // dstep
	ADDQ         $4, SI
	CMPQ         CX, $16
	JLT          da_loop              // no whole block
	VMULPS       deltaIota<>(SB), Z13, Z14
	VADDPS       Z14, Z12, Z14        // the levels dlo + k·dstep, k < 16

	// Whole blocks: deltaApplyBlock with every lane and byte, inline.
da_loop:
	CMPQ       CX, $16
	JLT        da_tail
	VMOVDQU8.Z 0(SI), K4, X5
	CMPQ       R8, $8
	JEQ        da_levels8
	VMOVQ      X5, AX
	SHRXQ      R11, AX, BX
	PDEPQ      R9, AX, AX
	PDEPQ      R9, BX, BX
	VMOVQ      AX, X5
	VPINSRQ    $1, BX, X5, X5

	VPMOVZXBD  X5, Z2
	VPERMPS    Z14, Z2, Z3            // the level of each code

da_level:
	PREFETCHT0 2048(DX)
	VMOVUPS    0(DX), Z4
	VADDPS     Z3, Z4, Z4             // rec + level
	VMOVUPS    Z4, 0(DX)
	LEAQ       0(DX)(DI*1), AX
	TESTQ      R15, AX
	JNE        da_cached
	VMOVNTPS   Z4, 0(AX)
	JMP        da_next

da_cached:
	VMOVUPS Z4, 0(AX)

da_next:
	ADDQ       R10, SI
	ADDQ       $64, DX
	SUBQ       $16, CX
	JMP        da_loop

	// 8-bit codes: more levels than a vector holds.
da_levels8:
	VPMOVZXBD X5, Z2
	VCVTDQ2PS Z2, Z3
	VMULPS    Z13, Z3, Z3             // code·dstep
	VADDPS    Z3, Z12, Z3             // dlo + code·dstep
	JMP       da_level

da_tail:
	TESTQ CX, CX
	JEQ   da_row_done
	MOVQ  $-1, AX
	BZHIQ CX, AX, BX
	KMOVW BX, K1
	IMULQ R8, CX
	ADDQ  $7, CX
	SHRQ  $3, CX
	BZHIQ CX, AX, BX
	KMOVQ BX, K3
	CALL  deltaApplyBlock<>(SB)

da_row_done:
	INCQ  R13
	MOVQ  width+32(FP), AX
	TESTQ $15, AX
	JEQ   da_row
	INCQ  R13
	JMP   da_row

da_done:
	SFENCE
	VZEROUPPER
	RET

// deltaApplyBlock adds the levels of the codes in the bytes of K3 at SI to
// the lanes of K1 of the block at DX and writes them to the block DI bytes
// on too. It clobbers AX, BX, Z2–Z5.
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
	VPMOVZXBD  X5, Z2
	VCVTDQ2PS  Z2, Z3
	VMULPS     Z13, Z3, Z3            // code·dstep
	VADDPS     Z3, Z12, Z3            // dlo + code·dstep
	PREFETCHT0 2048(DX)               // see deltaPrefetch
	VMOVUPS.Z  0(DX), K1, Z4
	VADDPS    Z3, Z4, Z4              // rec + level
	VMOVUPS   Z4, K1, 0(DX)
	VMOVUPS   Z4, K1, 0(DX)(DI*1)
	RET
