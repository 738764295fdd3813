//go:build !noasm

#include "textflag.h"

// The AVX-512 (VBMI) kernels of streamrows.go: gatherShortRows and
// scatterShortRows of whole groups of 16 rows, by masked byte permutes
// (VPERMB) whose indices and masks a shortRowsPlan holds at these offsets.
#define hdrIdx 0
#define codeIdx 64
#define outIdx 320
#define hdrMask 640
#define codeMask 680
#define winMask 840
#define codeOut 880
#define outHdr 912
#define outCode 952

// func gatherShortRowsAVX512(out, rows *byte, groups, k, w int, p *shortRowsPlan)
//
// For each of groups groups of 16 rows at rows (4+w bytes each), writes
// their header bytes j to out[j·k+16g:] and their codes to
// out[4k+16g·w:], as gatherShortRowsGo does.
TEXT ·gatherShortRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ      out+0(FP), DI
	MOVQ      rows+8(FP), SI
	MOVQ      groups+16(FP), CX
	MOVQ      k+24(FP), R8
	MOVQ      w+32(FP), R11
	MOVQ      p+40(FP), DX
	LEAQ      4(R11), R10
	SHLQ      $4, R10              // a group's bytes: 16·(4+w)
	SHLQ      $4, R11              // a group's codes: 16·w
	LEAQ      0(DI)(R8*4), R9      // the codes stream
	LEAQ      0(R8)(R8*2), R12     // 3k
	VMOVDQU64 hdrIdx(DX), Z20
	VMOVDQU64 codeIdx+0(DX), Z21
	VMOVDQU64 codeIdx+64(DX), Z22
	VMOVDQU64 codeIdx+128(DX), Z23
	VMOVDQU64 codeIdx+192(DX), Z24

gdr_group:
	TESTQ CX, CX
	JEQ   gdr_done
	KMOVQ       winMask+0(DX), K1
	VMOVDQU8.Z  0(SI), K1, Z0
	KMOVQ       winMask+8(DX), K1
	VMOVDQU8.Z  64(SI), K1, Z1
	KMOVQ       winMask+16(DX), K1
	VMOVDQU8.Z  128(SI), K1, Z2
	KMOVQ       winMask+24(DX), K1
	VMOVDQU8.Z  192(SI), K1, Z3
	KMOVQ       winMask+32(DX), K1
	VMOVDQU8.Z  256(SI), K1, Z4
	VPXORQ Z10, Z10, Z10
	KMOVQ  hdrMask+0(DX), K1
	VPERMB Z0, Z20, K1, Z10
	KMOVQ  hdrMask+8(DX), K1
	VPERMB Z1, Z20, K1, Z10
	KMOVQ  hdrMask+16(DX), K1
	VPERMB Z2, Z20, K1, Z10
	KMOVQ  hdrMask+24(DX), K1
	VPERMB Z3, Z20, K1, Z10
	KMOVQ  hdrMask+32(DX), K1
	VPERMB Z4, Z20, K1, Z10
	VMOVDQU       X10, 0(DI)
	VEXTRACTI32X4 $1, Z10, 0(DI)(R8*1)
	VEXTRACTI32X4 $2, Z10, 0(DI)(R8*2)
	VEXTRACTI32X4 $3, Z10, 0(DI)(R12*1)
	VPXORQ Z11, Z11, Z11
	KMOVQ  codeMask+0(DX), K1
	VPERMB Z0, Z21, K1, Z11
	KMOVQ  codeMask+8(DX), K1
	VPERMB Z1, Z21, K1, Z11
	KMOVQ  codeMask+16(DX), K1
	VPERMB Z2, Z21, K1, Z11
	KMOVQ  codeMask+24(DX), K1
	VPERMB Z3, Z21, K1, Z11
	KMOVQ  codeMask+32(DX), K1
	VPERMB Z4, Z21, K1, Z11
	KMOVQ    codeOut+0(DX), K2
	VMOVDQU8 Z11, K2, 0(R9)
	VPXORQ Z11, Z11, Z11
	KMOVQ  codeMask+40(DX), K1
	VPERMB Z0, Z22, K1, Z11
	KMOVQ  codeMask+48(DX), K1
	VPERMB Z1, Z22, K1, Z11
	KMOVQ  codeMask+56(DX), K1
	VPERMB Z2, Z22, K1, Z11
	KMOVQ  codeMask+64(DX), K1
	VPERMB Z3, Z22, K1, Z11
	KMOVQ  codeMask+72(DX), K1
	VPERMB Z4, Z22, K1, Z11
	KMOVQ    codeOut+8(DX), K2
	VMOVDQU8 Z11, K2, 64(R9)
	VPXORQ Z11, Z11, Z11
	KMOVQ  codeMask+80(DX), K1
	VPERMB Z0, Z23, K1, Z11
	KMOVQ  codeMask+88(DX), K1
	VPERMB Z1, Z23, K1, Z11
	KMOVQ  codeMask+96(DX), K1
	VPERMB Z2, Z23, K1, Z11
	KMOVQ  codeMask+104(DX), K1
	VPERMB Z3, Z23, K1, Z11
	KMOVQ  codeMask+112(DX), K1
	VPERMB Z4, Z23, K1, Z11
	KMOVQ    codeOut+16(DX), K2
	VMOVDQU8 Z11, K2, 128(R9)
	VPXORQ Z11, Z11, Z11
	KMOVQ  codeMask+120(DX), K1
	VPERMB Z0, Z24, K1, Z11
	KMOVQ  codeMask+128(DX), K1
	VPERMB Z1, Z24, K1, Z11
	KMOVQ  codeMask+136(DX), K1
	VPERMB Z2, Z24, K1, Z11
	KMOVQ  codeMask+144(DX), K1
	VPERMB Z3, Z24, K1, Z11
	KMOVQ  codeMask+152(DX), K1
	VPERMB Z4, Z24, K1, Z11
	KMOVQ    codeOut+24(DX), K2
	VMOVDQU8 Z11, K2, 192(R9)
	ADDQ R10, SI
	ADDQ $16, DI
	ADDQ R11, R9
	DECQ CX
	JMP  gdr_group

gdr_done:
	VZEROUPPER
	RET

// func scatterShortRowsAVX512(rows, s *byte, groups, k, w int, p *shortRowsPlan)
//
// For each of groups groups of 16 rows, writes to rows (4+w bytes each)
// the rows whose header bytes j are at s[j·k+16g:] and codes at
// s[4k+16g·w:], as scatterShortRowsGo does with no rows left out.
TEXT ·scatterShortRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ      rows+0(FP), DI
	MOVQ      s+8(FP), SI
	MOVQ      groups+16(FP), CX
	MOVQ      k+24(FP), R8
	MOVQ      w+32(FP), R11
	MOVQ      p+40(FP), DX
	LEAQ      4(R11), R10
	SHLQ      $4, R10              // a group's bytes: 16·(4+w)
	SHLQ      $4, R11              // a group's codes: 16·w
	LEAQ      0(SI)(R8*4), R9      // the codes stream
	LEAQ      0(R8)(R8*2), R12     // 3k
	VMOVDQU64 outIdx+0(DX), Z20
	VMOVDQU64 outIdx+64(DX), Z21
	VMOVDQU64 outIdx+128(DX), Z22
	VMOVDQU64 outIdx+192(DX), Z23
	VMOVDQU64 outIdx+256(DX), Z24

sdr_group:
	TESTQ CX, CX
	JEQ   sdr_done
	VMOVDQU      0(SI), X10
	VINSERTI32X4 $1, 0(SI)(R8*1), Z10, Z10
	VINSERTI32X4 $2, 0(SI)(R8*2), Z10, Z10
	VINSERTI32X4 $3, 0(SI)(R12*1), Z10, Z10
	KMOVQ       codeOut+0(DX), K1
	VMOVDQU8.Z  0(R9), K1, Z11
	KMOVQ       codeOut+8(DX), K1
	VMOVDQU8.Z  64(R9), K1, Z12
	KMOVQ       codeOut+16(DX), K1
	VMOVDQU8.Z  128(R9), K1, Z13
	KMOVQ       codeOut+24(DX), K1
	VMOVDQU8.Z  192(R9), K1, Z14
	KMOVQ    outHdr+0(DX), K1
	VPERMB.Z Z10, Z20, K1, Z0
	KMOVQ    outCode+0(DX), K1
	VPERMB   Z11, Z20, K1, Z0
	KMOVQ    outCode+8(DX), K1
	VPERMB   Z12, Z20, K1, Z0
	KMOVQ    outCode+16(DX), K1
	VPERMB   Z13, Z20, K1, Z0
	KMOVQ    outCode+24(DX), K1
	VPERMB   Z14, Z20, K1, Z0
	KMOVQ    winMask+0(DX), K2
	VMOVDQU8 Z0, K2, 0(DI)
	KMOVQ    outHdr+8(DX), K1
	VPERMB.Z Z10, Z21, K1, Z0
	KMOVQ    outCode+32(DX), K1
	VPERMB   Z11, Z21, K1, Z0
	KMOVQ    outCode+40(DX), K1
	VPERMB   Z12, Z21, K1, Z0
	KMOVQ    outCode+48(DX), K1
	VPERMB   Z13, Z21, K1, Z0
	KMOVQ    outCode+56(DX), K1
	VPERMB   Z14, Z21, K1, Z0
	KMOVQ    winMask+8(DX), K2
	VMOVDQU8 Z0, K2, 64(DI)
	KMOVQ    outHdr+16(DX), K1
	VPERMB.Z Z10, Z22, K1, Z0
	KMOVQ    outCode+64(DX), K1
	VPERMB   Z11, Z22, K1, Z0
	KMOVQ    outCode+72(DX), K1
	VPERMB   Z12, Z22, K1, Z0
	KMOVQ    outCode+80(DX), K1
	VPERMB   Z13, Z22, K1, Z0
	KMOVQ    outCode+88(DX), K1
	VPERMB   Z14, Z22, K1, Z0
	KMOVQ    winMask+16(DX), K2
	VMOVDQU8 Z0, K2, 128(DI)
	KMOVQ    outHdr+24(DX), K1
	VPERMB.Z Z10, Z23, K1, Z0
	KMOVQ    outCode+96(DX), K1
	VPERMB   Z11, Z23, K1, Z0
	KMOVQ    outCode+104(DX), K1
	VPERMB   Z12, Z23, K1, Z0
	KMOVQ    outCode+112(DX), K1
	VPERMB   Z13, Z23, K1, Z0
	KMOVQ    outCode+120(DX), K1
	VPERMB   Z14, Z23, K1, Z0
	KMOVQ    winMask+24(DX), K2
	VMOVDQU8 Z0, K2, 192(DI)
	KMOVQ    outHdr+32(DX), K1
	VPERMB.Z Z10, Z24, K1, Z0
	KMOVQ    outCode+128(DX), K1
	VPERMB   Z11, Z24, K1, Z0
	KMOVQ    outCode+136(DX), K1
	VPERMB   Z12, Z24, K1, Z0
	KMOVQ    outCode+144(DX), K1
	VPERMB   Z13, Z24, K1, Z0
	KMOVQ    outCode+152(DX), K1
	VPERMB   Z14, Z24, K1, Z0
	KMOVQ    winMask+32(DX), K2
	VMOVDQU8 Z0, K2, 256(DI)
	ADDQ R10, DI
	ADDQ $16, SI
	ADDQ R11, R9
	DECQ CX
	JMP  sdr_group

sdr_done:
	VZEROUPPER
	RET
