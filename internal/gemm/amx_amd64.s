//go:build !noasm

#include "textflag.h"

// The tile configuration: palette 1, eight tiles of 16 rows × 64 bytes
// (C: 16×16 float32; A: 16 rows × 16 pairs; B: 16 steps × 16 columns).
DATA amxcfg<>+0(SB)/8, $1
DATA amxcfg<>+8(SB)/8, $0
DATA amxcfg<>+16(SB)/8, $0x0040004000400040
DATA amxcfg<>+24(SB)/8, $0x0040004000400040
DATA amxcfg<>+32(SB)/8, $0
DATA amxcfg<>+40(SB)/8, $0
DATA amxcfg<>+48(SB)/8, $0x1010101010101010
DATA amxcfg<>+56(SB)/8, $0
GLOBL amxcfg<>(SB), RODATA|NOPTR, $64

// Go's assembler lacks the AMX instructions, so they are encoded by hand
// (VEX map 0F38). Tiles: TMM0-3 hold the 32×32 float32 tile of C in four
// 16×16 quarters, TMM4-5 the top and bottom 16 rows of a, TMM6-7 the left
// and right 16 columns of b. Register operands: (base)(index*1), with the
// stride in the index register.

// func kernel32x32AMX(steps int, a, b *uint32, c *float32, ldc int, load bool, pf uintptr)
TEXT ·kernel32x32AMX(SB), NOSPLIT, $0-56
	MOVQ steps+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), BX
	SHLQ $2, BX                  // C's row stride in bytes

	// Start fetching C's 32 rows now so that the stores at the end do
	// not wait on memory.
	MOVQ DX, AX
	MOVQ $32, R8
prefetchamx:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ BX, AX
	DECQ R8
	JNZ  prefetchamx
	LEAQ amxcfg<>(SB), AX
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // LDTILECFG (AX)
	MOVQ CX, AX
	SHLQ $2, AX                  // a's row stride in bytes: steps pairs
	MOVQ AX, R8
	SHLQ $4, R8
	ADDQ SI, R8                  // a's row 16
	LEAQ 64(DI), R9              // b's column 16
	MOVQ $128, R13               // b's step stride: 32 columns
	LEAQ 64(DX), R10             // C[0][16]
	MOVQ BX, R11
	SHLQ $4, R11
	ADDQ DX, R11                 // C[16][0]
	LEAQ 64(R11), R12            // C[16][16]
	SHRQ $4, CX                  // blocks of 16 steps (steps is a multiple of 16)
	CMPB load+40(FP), $0
	JEQ  zeroamx
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x1A // TILELOADD (DX)(BX*1), TMM0
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x1A // TILELOADD (R10)(BX*1), TMM1
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x1B // TILELOADD (R11)(BX*1), TMM2
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7B; BYTE $0x4B; BYTE $0x1C; BYTE $0x1C // TILELOADD (R12)(BX*1), TMM3
	JMP  stepsamx

zeroamx:
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC0 // TILEZERO TMM0
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC8 // TILEZERO TMM1
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD0 // TILEZERO TMM2
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD8 // TILEZERO TMM3

stepsamx:
	TESTQ CX, CX
	JZ   storeamx // no steps: C as loaded, or zero

loopamx:
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x24; BYTE $0x06 // TILELOADD (SI)(AX*1), TMM4
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7B; BYTE $0x4B; BYTE $0x2C; BYTE $0x00 // TILELOADD (R8)(AX*1), TMM5
	BYTE $0xC4; BYTE $0xA2; BYTE $0x7B; BYTE $0x4B; BYTE $0x34; BYTE $0x2F // TILELOADD (DI)(R13*1), TMM6
	BYTE $0xC4; BYTE $0x82; BYTE $0x7B; BYTE $0x4B; BYTE $0x3C; BYTE $0x29 // TILELOADD (R9)(R13*1), TMM7
	BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xC4 // TDPBF16PS TMM6, TMM4, TMM0
	BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xCC // TDPBF16PS TMM7, TMM4, TMM1
	BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xD5 // TDPBF16PS TMM6, TMM5, TMM2
	BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xDD // TDPBF16PS TMM7, TMM5, TMM3
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $2048, DI
	ADDQ $2048, R9
	DECQ CX
	JNZ  loopamx

storeamx:
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x1A // TILESTORED TMM0, (DX)(BX*1)
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7A; BYTE $0x4B; BYTE $0x0C; BYTE $0x1A // TILESTORED TMM1, (R10)(BX*1)
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x1B // TILESTORED TMM2, (R11)(BX*1)
	BYTE $0xC4; BYTE $0xC2; BYTE $0x7A; BYTE $0x4B; BYTE $0x1C; BYTE $0x1C // TILESTORED TMM3, (R12)(BX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 // TILERELEASE
	RET
