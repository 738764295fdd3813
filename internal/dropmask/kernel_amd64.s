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
