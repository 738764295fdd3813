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

// SignBits and KeepByBits on AVX2, without mask registers. SignBits
// compares 8 values at a time and VMOVMSKPS packs the 8 results into bits
// of a general register. KeepByBits broadcasts a 32-bit piece of a word to
// every lane and shifts lane i's bit (lane i of group g takes bit 8g+i)
// into its sign with VPSLLVD by 31−8g−i; VPSRAD then spreads the sign into
// a lane mask that ANDs with x·scale, the twin's AND bit for bit. The last
// values short of 8 load and store under signtail<>+32−4r: r all-ones
// lanes, then zero lanes.

DATA signtail<>+0(SB)/8, $0xffffffffffffffff
DATA signtail<>+8(SB)/8, $0xffffffffffffffff
DATA signtail<>+16(SB)/8, $0xffffffffffffffff
DATA signtail<>+24(SB)/8, $0xffffffffffffffff
DATA signtail<>+32(SB)/8, $0
DATA signtail<>+40(SB)/8, $0
DATA signtail<>+48(SB)/8, $0
DATA signtail<>+56(SB)/8, $0
GLOBL signtail<>(SB), RODATA|NOPTR, $64

// bitshift<>+32g: the VPSLLVD counts 31−8g−i of lanes i = 0…7 of group g.
DATA bitshift<>+0(SB)/8, $0x0000001e0000001f
DATA bitshift<>+8(SB)/8, $0x0000001c0000001d
DATA bitshift<>+16(SB)/8, $0x0000001a0000001b
DATA bitshift<>+24(SB)/8, $0x0000001800000019
DATA bitshift<>+32(SB)/8, $0x0000001600000017
DATA bitshift<>+40(SB)/8, $0x0000001400000015
DATA bitshift<>+48(SB)/8, $0x0000001200000013
DATA bitshift<>+56(SB)/8, $0x0000001000000011
DATA bitshift<>+64(SB)/8, $0x0000000e0000000f
DATA bitshift<>+72(SB)/8, $0x0000000c0000000d
DATA bitshift<>+80(SB)/8, $0x0000000a0000000b
DATA bitshift<>+88(SB)/8, $0x0000000800000009
DATA bitshift<>+96(SB)/8, $0x0000000600000007
DATA bitshift<>+104(SB)/8, $0x0000000400000005
DATA bitshift<>+112(SB)/8, $0x0000000200000003
DATA bitshift<>+120(SB)/8, $0x0000000000000001
GLOBL bitshift<>(SB), RODATA|NOPTR, $128

// func signBitsAVX2(bits []uint64, x []float32)
TEXT ·signBitsAVX2(SB), NOSPLIT, $0-48
	MOVQ bits_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), R9
	VXORPS Y14, Y14, Y14

signbitsavx2_word:
	CMPQ R9, $64
	JLT  signbitsavx2_tail
	VCMPPS $0x11, 0(SI), Y14, Y0 // 0 < x: ordered, so false for NaN
	VCMPPS $0x11, 32(SI), Y14, Y1
	VCMPPS $0x11, 64(SI), Y14, Y2
	VCMPPS $0x11, 96(SI), Y14, Y3
	VCMPPS $0x11, 128(SI), Y14, Y4
	VCMPPS $0x11, 160(SI), Y14, Y5
	VCMPPS $0x11, 192(SI), Y14, Y6
	VCMPPS $0x11, 224(SI), Y14, Y7
	VMOVMSKPS Y0, AX
	VMOVMSKPS Y1, BX
	VMOVMSKPS Y2, CX
	VMOVMSKPS Y3, DX
	SHLQ $8, BX
	SHLQ $16, CX
	SHLQ $24, DX
	ORQ  BX, AX
	ORQ  DX, CX
	ORQ  CX, AX
	VMOVMSKPS Y4, BX
	VMOVMSKPS Y5, CX
	VMOVMSKPS Y6, DX
	VMOVMSKPS Y7, R10
	SHLQ $32, BX
	SHLQ $40, CX
	SHLQ $48, DX
	SHLQ $56, R10
	ORQ  BX, AX
	ORQ  DX, CX
	ORQ  R10, AX
	ORQ  CX, AX
	MOVQ AX, 0(DI)
	ADDQ $256, SI
	ADDQ $8, DI
	SUBQ $64, R9
	JMP  signbitsavx2_word

signbitsavx2_tail: // fewer than 64 values: 8 at a time, the last masked
	TESTQ R9, R9
	JZ    signbitsavx2_done
	XORQ  AX, AX
	XORQ  CX, CX

signbitsavx2_tail8:
	CMPQ R9, $8
	JLT  signbitsavx2_last
	VCMPPS $0x11, 0(SI), Y14, Y0
	VMOVMSKPS Y0, BX
	SHLQ CX, BX
	ORQ  BX, AX
	ADDQ $32, SI
	ADDQ $8, CX
	SUBQ $8, R9
	JMP  signbitsavx2_tail8

signbitsavx2_last:
	TESTQ R9, R9
	JZ    signbitsavx2_store
	LEAQ  signtail<>+32(SB), BX
	SHLQ  $2, R9
	SUBQ  R9, BX
	VMOVDQU (BX), Y13
	VMASKMOVPS 0(SI), Y13, Y0 // lanes past the end read as 0: not positive
	VCMPPS $0x11, Y0, Y14, Y0
	VMOVMSKPS Y0, BX
	SHLQ CX, BX
	ORQ  BX, AX

signbitsavx2_store:
	MOVQ AX, 0(DI)

signbitsavx2_done:
	VZEROUPPER
	RET

// func keepByBitsAVX2(x []float32, bits []uint64, scale float32)
TEXT ·keepByBitsAVX2(SB), NOSPLIT, $0-52
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), R9
	MOVQ bits_base+24(FP), DX
	VBROADCASTSS scale+48(FP), Y15
	VMOVDQU bitshift<>+0(SB), Y10
	VMOVDQU bitshift<>+32(SB), Y11
	VMOVDQU bitshift<>+64(SB), Y12
	VMOVDQU bitshift<>+96(SB), Y13

keepbybitsavx2_word:
	CMPQ R9, $64
	JLT  keepbybitsavx2_tail8
	VPBROADCASTD 0(DX), Y8 // bits 0…31
	VPBROADCASTD 4(DX), Y9 // bits 32…63
	VPSLLVD Y10, Y8, Y0
	VPSLLVD Y11, Y8, Y1
	VPSLLVD Y12, Y8, Y2
	VPSLLVD Y13, Y8, Y3
	VPSRAD  $31, Y0, Y0
	VPSRAD  $31, Y1, Y1
	VPSRAD  $31, Y2, Y2
	VPSRAD  $31, Y3, Y3
	VMOVUPS 0(SI), Y4
	VMULPS  Y15, Y4, Y4
	VMOVUPS 32(SI), Y5
	VMULPS  Y15, Y5, Y5
	VMOVUPS 64(SI), Y6
	VMULPS  Y15, Y6, Y6
	VMOVUPS 96(SI), Y7
	VMULPS  Y15, Y7, Y7
	VANDPS  Y4, Y0, Y0
	VANDPS  Y5, Y1, Y1
	VANDPS  Y6, Y2, Y2
	VANDPS  Y7, Y3, Y3
	VMOVUPS Y0, 0(SI)
	VMOVUPS Y1, 32(SI)
	VMOVUPS Y2, 64(SI)
	VMOVUPS Y3, 96(SI)
	VPSLLVD Y10, Y9, Y0
	VPSLLVD Y11, Y9, Y1
	VPSLLVD Y12, Y9, Y2
	VPSLLVD Y13, Y9, Y3
	VPSRAD  $31, Y0, Y0
	VPSRAD  $31, Y1, Y1
	VPSRAD  $31, Y2, Y2
	VPSRAD  $31, Y3, Y3
	VMOVUPS 128(SI), Y4
	VMULPS  Y15, Y4, Y4
	VMOVUPS 160(SI), Y5
	VMULPS  Y15, Y5, Y5
	VMOVUPS 192(SI), Y6
	VMULPS  Y15, Y6, Y6
	VMOVUPS 224(SI), Y7
	VMULPS  Y15, Y7, Y7
	VANDPS  Y4, Y0, Y0
	VANDPS  Y5, Y1, Y1
	VANDPS  Y6, Y2, Y2
	VANDPS  Y7, Y3, Y3
	VMOVUPS Y0, 128(SI)
	VMOVUPS Y1, 160(SI)
	VMOVUPS Y2, 192(SI)
	VMOVUPS Y3, 224(SI)
	ADDQ $256, SI
	ADDQ $8, DX
	SUBQ $64, R9
	JMP  keepbybitsavx2_word

keepbybitsavx2_tail8: // fewer than 64 values: a byte of bits per 8 values
	CMPQ R9, $8
	JLT  keepbybitsavx2_last
	VPBROADCASTB 0(DX), Y8 // the byte in bits 0…7 of every lane
	VPSLLVD Y10, Y8, Y0
	VPSRAD  $31, Y0, Y0
	VMOVUPS 0(SI), Y4
	VMULPS  Y15, Y4, Y4
	VANDPS  Y4, Y0, Y0
	VMOVUPS Y0, 0(SI)
	ADDQ $32, SI
	INCQ DX
	SUBQ $8, R9
	JMP  keepbybitsavx2_tail8

keepbybitsavx2_last:
	TESTQ R9, R9
	JZ    keepbybitsavx2_done
	LEAQ  signtail<>+32(SB), BX
	SHLQ  $2, R9
	SUBQ  R9, BX
	VMOVDQU (BX), Y14
	VPBROADCASTB 0(DX), Y8
	VPSLLVD Y10, Y8, Y0
	VPSRAD  $31, Y0, Y0
	VMASKMOVPS 0(SI), Y14, Y4
	VMULPS  Y15, Y4, Y4
	VANDPS  Y4, Y0, Y0
	VMASKMOVPS Y0, Y14, 0(SI)

keepbybitsavx2_done:
	VZEROUPPER
	RET
