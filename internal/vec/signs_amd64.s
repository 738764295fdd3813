//go:build !noasm

#include "textflag.h"

// SignBits and KeepByBits on AVX-512: a compare into an opmask register
// is 16 sign bits, and an opmask register loaded from 16 bits zeroes the
// lanes whose bit is clear. Registers: SI the values, DI/DX the bits, R9
// the values left, Z14 zero, Z15 the scale.

// func signBitsAVX512(bits []uint64, x []float32)
TEXT ·signBitsAVX512(SB), NOSPLIT, $0-48
	MOVQ bits_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), R9
	VXORPS Z14, Z14, Z14

signbits_word:
	CMPQ R9, $64
	JLT  signbits_tail
	VCMPPS $0x11, 0(SI), Z14, K1 // 0 < x: ordered, so false for NaN
	VCMPPS $0x11, 64(SI), Z14, K2
	VCMPPS $0x11, 128(SI), Z14, K3
	VCMPPS $0x11, 192(SI), Z14, K4
	KMOVW K1, AX
	KMOVW K2, BX
	SHLQ $16, BX
	ORQ  BX, AX
	KMOVW K3, BX
	SHLQ $32, BX
	ORQ  BX, AX
	KMOVW K4, BX
	SHLQ $48, BX
	ORQ  BX, AX
	MOVQ AX, 0(DI)
	ADDQ $256, SI
	ADDQ $8, DI
	SUBQ $64, R9
	JMP  signbits_word

signbits_tail: // fewer than 64 values: a word of 16 at a time, the last masked
	TESTQ R9, R9
	JZ    signbits_done
	XORQ  AX, AX
	XORQ  CX, CX

signbits_tail16:
	CMPQ R9, $16
	JLT  signbits_last
	VCMPPS $0x11, 0(SI), Z14, K1
	KMOVW K1, BX
	SHLQ CX, BX
	ORQ  BX, AX
	ADDQ $64, SI
	ADDQ $16, CX
	SUBQ $16, R9
	JMP  signbits_tail16

signbits_last:
	TESTQ R9, R9
	JZ    signbits_store
	MOVQ  CX, R10
	MOVQ  R9, CX
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	KMOVW BX, K2
	MOVQ  R10, CX
	VMOVUPS.Z 0(SI), K2, Z0 // lanes past the end read as 0: not positive
	VCMPPS $0x11, Z0, Z14, K1
	KMOVW K1, BX
	SHLQ CX, BX
	ORQ  BX, AX

signbits_store:
	MOVQ AX, 0(DI)

signbits_done:
	VZEROUPPER
	RET

// func keepByBitsAVX512(x []float32, bits []uint64, scale float32)
TEXT ·keepByBitsAVX512(SB), NOSPLIT, $0-52
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), R9
	MOVQ bits_base+24(FP), DX
	VBROADCASTSS scale+48(FP), Z15

keepbybits_loop4:
	CMPQ R9, $64
	JLT  keepbybits_loop1
	KMOVW 0(DX), K1
	KMOVW 2(DX), K2
	KMOVW 4(DX), K3
	KMOVW 6(DX), K4
	VMULPS.Z 0(SI), Z15, K1, Z0
	VMULPS.Z 64(SI), Z15, K2, Z1
	VMULPS.Z 128(SI), Z15, K3, Z2
	VMULPS.Z 192(SI), Z15, K4, Z3
	VMOVUPS Z0, 0(SI)
	VMOVUPS Z1, 64(SI)
	VMOVUPS Z2, 128(SI)
	VMOVUPS Z3, 192(SI)
	ADDQ $256, SI
	ADDQ $8, DX
	SUBQ $64, R9
	JMP  keepbybits_loop4

keepbybits_loop1:
	CMPQ R9, $16
	JLT  keepbybits_tail
	KMOVW 0(DX), K1
	VMULPS.Z 0(SI), Z15, K1, Z0
	VMOVUPS Z0, 0(SI)
	ADDQ $64, SI
	ADDQ $2, DX
	SUBQ $16, R9
	JMP  keepbybits_loop1

keepbybits_tail:
	TESTQ R9, R9
	JZ    keepbybits_done
	MOVQ  R9, CX
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K2
	KMOVW 0(DX), K1 // within the last word: the 16 bits of the last values
	KANDW K2, K1, K1
	VMULPS.Z 0(SI), Z15, K1, Z0
	VMOVUPS Z0, K2, 0(SI)

keepbybits_done:
	VZEROUPPER
	RET
