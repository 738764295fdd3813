//go:build !noasm

#include "textflag.h"

// dropconst<> holds the column groups 0..7 of one step, splitmix64's two
// multipliers and the step's increment of the groups.
DATA dropconst<>+0(SB)/8, $0
DATA dropconst<>+8(SB)/8, $1
DATA dropconst<>+16(SB)/8, $2
DATA dropconst<>+24(SB)/8, $3
DATA dropconst<>+32(SB)/8, $4
DATA dropconst<>+40(SB)/8, $5
DATA dropconst<>+48(SB)/8, $6
DATA dropconst<>+56(SB)/8, $7
DATA dropconst<>+64(SB)/8, $0xbf58476d1ce4e5b9
DATA dropconst<>+72(SB)/8, $0x94d049bb133111eb
DATA dropconst<>+80(SB)/8, $8
GLOBL dropconst<>(SB), RODATA|NOPTR, $88

// HASH sets K1 and K2 to the keep decisions of the 32 columns of the eight
// groups in Z28 (low and high 16 columns).
#define HASH \
	VPORQ   Z29, Z28, Z0; \
	VPXORQ  Z30, Z0, Z0; \
	VPSRLQ  $30, Z0, Z1; \
	VPXORQ  Z1, Z0, Z0; \
	VPMULLQ Z26, Z0, Z0; \
	VPSRLQ  $27, Z0, Z1; \
	VPXORQ  Z1, Z0, Z0; \
	VPMULLQ Z25, Z0, Z0; \
	VPSRLQ  $31, Z0, Z1; \
	VPXORQ  Z1, Z0, Z0; \
	VPCMPUW $5, Z24, Z0, K1; \
	KSHIFTRD $16, K1, K2

// func applyAVX512(y, x []float32, key, base uint64, thr int32, scale float32)
//
// One step covers 32 columns: eight column groups, whose hashes' 32 16-bit
// lanes line up with the 32 floats (lane i of the vector is lane i%4 of
// group i/4, the decision of column i). A last step of fewer than 32
// columns loads and stores under a mask of its length, which also keeps
// it from touching memory past the row.
TEXT ·applyAVX512(SB), NOSPLIT, $0-72
	MOVQ y_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	VPBROADCASTQ key+48(FP), Z30
	VPBROADCASTQ base+56(FP), Z29
	MOVL thr+64(FP), AX
	VPBROADCASTW AX, Z24
	VBROADCASTSS scale+68(FP), Z31
	VPBROADCASTQ dropconst<>+64(SB), Z26
	VPBROADCASTQ dropconst<>+72(SB), Z25
	VPBROADCASTQ dropconst<>+80(SB), Z27
	VMOVDQU64 dropconst<>+0(SB), Z28

loop:
	CMPQ CX, $32
	JLT  tail
	HASH
	VMOVUPS  0(SI), Z2
	VMULPS.Z Z31, Z2, K1, Z2
	VMOVUPS  Z2, 0(DI)
	VMOVUPS  64(SI), Z3
	VMULPS.Z Z31, Z3, K2, Z3
	VMOVUPS  Z3, 64(DI)
	VPADDQ   Z27, Z28, Z28
	ADDQ     $128, SI
	ADDQ     $128, DI
	SUBQ     $32, CX
	JMP      loop

tail:
	TESTQ CX, CX
	JZ    done
	HASH
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVD AX, K3 // the row's remaining columns
	KSHIFTRD $16, K3, K4
	VMOVUPS.Z 0(SI), K3, Z2
	VMULPS.Z  Z31, Z2, K1, Z2
	VMOVUPS   Z2, K3, 0(DI)
	VMOVUPS.Z 64(SI), K4, Z3
	VMULPS.Z  Z31, Z3, K2, Z3
	VMOVUPS   Z3, K4, 64(DI)

done:
	VZEROUPPER
	RET

// MULLO sets Y0 to Y0·m mod 2⁶⁴ in each 64-bit lane, from 32-bit
// products (AVX2 has no VPMULLQ): lo·lo + (hi·lo + lo·hi)<<32, where
// ml and mh hold m's low and high 32 bits.
#define MULLO(ml, mh) \
	VPMULUDQ ml, Y0, Y1; \
	VPSRLQ   $32, Y0, Y2; \
	VPMULUDQ ml, Y2, Y2; \
	VPMULUDQ mh, Y0, Y3; \
	VPADDQ   Y3, Y2, Y2; \
	VPSLLQ   $32, Y2, Y2; \
	VPADDQ   Y2, Y1, Y0

// HASH2W sets the 16 16-bit lanes of Y0 to the keep masks (all ones or
// zero) of the 16 columns of the four groups in Y7: a lane h keeps its
// column when h ≥ thr, unsigned, that is when max(h, thr) = h.
#define HASH2W \
	VPOR     Y14, Y7, Y0; \
	VPXOR    Y15, Y0, Y0; \
	VPSRLQ   $30, Y0, Y1; \
	VPXOR    Y1, Y0, Y0; \
	MULLO(Y11, Y10); \
	VPSRLQ   $27, Y0, Y1; \
	VPXOR    Y1, Y0, Y0; \
	MULLO(Y9, Y8); \
	VPSRLQ   $31, Y0, Y1; \
	VPXOR    Y1, Y0, Y0; \
	VPMAXUW  Y13, Y0, Y1; \
	VPCMPEQW Y1, Y0, Y0

// HASH2 sets Y4 and Y5 to the keep masks of the 16 columns of the four
// groups in Y7 (columns 0–7 and 8–15), HASH2W's lanes widened.
#define HASH2 \
	HASH2W; \
	VPMOVSXWD X0, Y4; \
	VEXTRACTI128 $1, Y0, X5; \
	VPMOVSXWD X5, Y5

// droptail<>+32−4r holds r all-ones lanes followed by zero lanes.
DATA droptail<>+0(SB)/8, $0xffffffffffffffff
DATA droptail<>+8(SB)/8, $0xffffffffffffffff
DATA droptail<>+16(SB)/8, $0xffffffffffffffff
DATA droptail<>+24(SB)/8, $0xffffffffffffffff
DATA droptail<>+32(SB)/8, $0
DATA droptail<>+40(SB)/8, $0
DATA droptail<>+48(SB)/8, $0
DATA droptail<>+56(SB)/8, $0
GLOBL droptail<>(SB), RODATA|NOPTR, $64

// func applyAVX2(y, x []float32, key, base uint64, thr int32, scale float32)
//
// One step covers 16 columns: four column groups, whose hashes' 16 16-bit
// lanes line up with the 16 floats (lane i is lane i%4 of group i/4), each
// lane widened to a 32-bit mask that ANDs with x·scale as the twin does.
// A last step of fewer than 16 columns loads and stores under masks of
// its length (8 columns each), which keep it inside the row.
TEXT ·applyAVX2(SB), NOSPLIT, $0-72
	MOVQ y_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	VPBROADCASTQ key+48(FP), Y15
	VPBROADCASTQ base+56(FP), Y14
	MOVL         thr+64(FP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13
	VBROADCASTSS scale+68(FP), Y12
	VPBROADCASTQ dropconst<>+64(SB), Y11
	VPSRLQ       $32, Y11, Y10
	VPBROADCASTQ dropconst<>+72(SB), Y9
	VPSRLQ       $32, Y9, Y8
	VMOVDQU      dropconst<>+0(SB), Y7 // groups 0…3
	VPBROADCASTQ dropconst<>+32(SB), Y6 // 4: a step's groups

avx2_loop:
	CMPQ CX, $16
	JLT  avx2_tail
	HASH2
	VMOVUPS 0(SI), Y2
	VMULPS  Y12, Y2, Y2
	VANDPS  Y4, Y2, Y2
	VMOVUPS Y2, 0(DI)
	VMOVUPS 32(SI), Y3
	VMULPS  Y12, Y3, Y3
	VANDPS  Y5, Y3, Y3
	VMOVUPS Y3, 32(DI)
	VPADDQ  Y6, Y7, Y7
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     avx2_loop

avx2_tail:
	TESTQ CX, CX
	JZ    avx2_done
	HASH2
	MOVQ    $8, AX
	CMPQ    CX, AX
	CMOVQLT CX, AX // the first 8 columns' count
	SUBQ    AX, CX // the last 8 columns' count
	SHLQ    $2, AX
	SHLQ    $2, CX
	LEAQ    droptail<>+32(SB), BX
	MOVQ    BX, DX
	SUBQ    AX, BX
	SUBQ    CX, DX
	VMOVDQU (BX), Y6
	VMASKMOVPS 0(SI), Y6, Y2
	VMULPS     Y12, Y2, Y2
	VANDPS     Y4, Y2, Y2
	VMASKMOVPS Y2, Y6, 0(DI)
	TESTQ      CX, CX
	JZ         avx2_done // no columns past the first 8
	VMOVDQU    (DX), Y7
	VMASKMOVPS 32(SI), Y7, Y3
	VMULPS     Y12, Y3, Y3
	VANDPS     Y5, Y3, Y3
	VMASKMOVPS Y3, Y7, 32(DI)

avx2_done:
	VZEROUPPER
	RET

// func keepBitsAVX512(dst []uint64, n int, key, base uint64, thr int32)
//
// HASH's 32 decisions of a step are the step's 32 bits of dst; the last
// step, short of 32 columns, keeps the bits of its columns alone.
TEXT ·keepBitsAVX512(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ n+24(FP), CX
	VPBROADCASTQ key+32(FP), Z30
	VPBROADCASTQ base+40(FP), Z29
	MOVL thr+48(FP), AX
	VPBROADCASTW AX, Z24
	VPBROADCASTQ dropconst<>+64(SB), Z26
	VPBROADCASTQ dropconst<>+72(SB), Z25
	VPBROADCASTQ dropconst<>+80(SB), Z27
	VMOVDQU64 dropconst<>+0(SB), Z28

bits512_loop:
	CMPQ CX, $32
	JLT  bits512_tail
	HASH
	KMOVD    K1, 0(DI)
	VPADDQ   Z27, Z28, Z28
	ADDQ     $4, DI
	SUBQ     $32, CX
	JMP      bits512_loop

bits512_tail:
	TESTQ CX, CX
	JZ    bits512_done
	HASH
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVD AX, K3
	KANDD K3, K1, K1
	KMOVD K1, 0(DI)

bits512_done:
	VZEROUPPER
	RET

// func keepBitsAVX2(dst []uint64, n int, key, base uint64, thr int32)
//
// HASH2W's 16 decisions of a step, packed to bytes and their sign bits
// gathered, are the step's 16 bits of dst; the last step, short of 16
// columns, keeps the bits of its columns alone.
TEXT ·keepBitsAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ n+24(FP), CX
	VPBROADCASTQ key+32(FP), Y15
	VPBROADCASTQ base+40(FP), Y14
	MOVL         thr+48(FP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13
	VPBROADCASTQ dropconst<>+64(SB), Y11
	VPSRLQ       $32, Y11, Y10
	VPBROADCASTQ dropconst<>+72(SB), Y9
	VPSRLQ       $32, Y9, Y8
	VMOVDQU      dropconst<>+0(SB), Y7 // groups 0…3
	VPBROADCASTQ dropconst<>+32(SB), Y6 // 4: a step's groups

bits2_loop:
	CMPQ CX, $16
	JLT  bits2_tail
	HASH2W
	VEXTRACTI128 $1, Y0, X1
	VPACKSSWB    X1, X0, X0
	VPMOVMSKB    X0, AX
	MOVW         AX, 0(DI)
	VPADDQ       Y6, Y7, Y7
	ADDQ         $2, DI
	SUBQ         $16, CX
	JMP          bits2_loop

bits2_tail:
	TESTQ CX, CX
	JZ    bits2_done
	HASH2W
	VEXTRACTI128 $1, Y0, X1
	VPACKSSWB    X1, X0, X0
	VPMOVMSKB    X0, AX
	MOVL         $1, DX
	SHLL         CX, DX
	DECL         DX
	ANDL         DX, AX
	MOVW         AX, 0(DI)

bits2_done:
	VZEROUPPER
	RET
