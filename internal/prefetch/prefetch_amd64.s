//go:build !noasm

#include "textflag.h"

// func int32s(base []int32, idx []int32)
TEXT ·int32s(SB), NOSPLIT, $0-48
	MOVQ base_base+0(FP), AX
	MOVQ idx_base+24(FP), SI
	MOVQ idx_len+32(FP), CX
	TESTQ CX, CX
	JZ   done32

loop32:
	MOVLQSX (SI), DX
	PREFETCHT0 (AX)(DX*4)
	ADDQ $4, SI
	DECQ CX
	JNZ  loop32

done32:
	RET

// func int64s(base []int64, idx []int32)
TEXT ·int64s(SB), NOSPLIT, $0-48
	MOVQ base_base+0(FP), AX
	MOVQ idx_base+24(FP), SI
	MOVQ idx_len+32(FP), CX
	TESTQ CX, CX
	JZ   done64

loop64:
	MOVLQSX (SI), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $4, SI
	DECQ CX
	JNZ  loop64

done64:
	RET

// func rows(base unsafe.Pointer, rowBytes int, idx []int32)
TEXT ·rows(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), AX
	MOVQ rowBytes+8(FP), BX
	MOVQ idx_base+16(FP), SI
	MOVQ idx_len+24(FP), CX
	TESTQ CX, CX
	JZ   doneRows

rowLoop:
	MOVLQSX (SI), DX
	IMULQ BX, DX
	ADDQ AX, DX         // the row's first byte
	LEAQ (DX)(BX*1), R8 // one past its last
	ANDQ $-64, DX       // whole lines, so the last one is not missed

lineLoop:
	PREFETCHT0 (DX)
	ADDQ $64, DX
	CMPQ DX, R8
	JLT  lineLoop
	ADDQ $4, SI
	DECQ CX
	JNZ  rowLoop

doneRows:
	RET
