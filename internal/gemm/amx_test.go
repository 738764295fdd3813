package gemm

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// amxRegs numbers the general registers as x86 encodes them.
var amxRegs = map[string]int{"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13}

// amxEncode encodes the AMX instructions amx_amd64.s uses, written as in
// its comments (Go operand order), from the Intel SDM's forms: three-byte
// VEX, map 0F38, W0, L0; memory operands as SIB with scale 1.
func amxEncode(op string, args []string) ([]byte, error) {
	vex := func(x, b, pp int, vvvv int) []byte {
		return []byte{0xc4, byte((^x&1)<<6 | (^b&1)<<5 | 0x82), byte((^vvvv&15)<<3 | pp)}
	}
	tmm := func(s string) int { n, _ := strconv.Atoi(strings.TrimPrefix(s, "TMM")); return n }
	mem := regexp.MustCompile(`^\((\w+)\)\((\w+)\*1\)$`)
	sib := func(m string) (int, int, error) {
		g := mem.FindStringSubmatch(m)
		if g == nil {
			return 0, 0, fmt.Errorf("operand %q", m)
		}
		return amxRegs[g[1]], amxRegs[g[2]], nil
	}
	switch op {
	case "LDTILECFG": // VEX.128.NP.0F38.W0 49 !(11):000:bbb
		return append(vex(0, 0, 0, 0), 0x49, byte(amxRegs[strings.Trim(args[0], "()")])), nil
	case "TILERELEASE": // VEX.128.NP.0F38.W0 49 C0
		return append(vex(0, 0, 0, 0), 0x49, 0xc0), nil
	case "TILEZERO": // VEX.128.F2.0F38.W0 49 11:rrr:000
		return append(vex(0, 0, 3, 0), 0x49, byte(0xc0|tmm(args[0])<<3)), nil
	case "TILELOADD", "TILESTORED": // VEX.128.F2 (load) / F3 (store).0F38.W0 4B !(11):rrr:100
		m, t, pp := args[0], tmm(args[1]), 3
		if op == "TILESTORED" {
			m, t, pp = args[1], tmm(args[0]), 2
		}
		base, index, err := sib(m)
		if err != nil {
			return nil, err
		}
		return append(vex(index>>3, base>>3, pp, 0), 0x4b, byte(t<<3|4), byte((index&7)<<3|base&7)), nil
	case "TDPBF16PS": // VEX.128.F3.0F38.W0 5C 11:rrr:bbb, tmm3 in vvvv; Go order: B, A, C
		b, a, c := tmm(args[0]), tmm(args[1]), tmm(args[2])
		return append(vex(0, 0, 2, b), 0x5c, byte(0xc0|c<<3|a)), nil
	}
	return nil, fmt.Errorf("unknown instruction %s", op)
}

// TestAMXEncoder checks amxEncode against binutils' disassembly of the
// same bytes (objdump -D -m i386:x86-64, AT&T operand order).
func TestAMXEncoder(t *testing.T) {
	for _, c := range []struct {
		goSyntax string
		objdump  string // what objdump prints for want
		want     []byte
	}{
		{"LDTILECFG (AX)", "ldtilecfg (%rax)", []byte{0xc4, 0xe2, 0x78, 0x49, 0x00}},
		{"TILELOADD (DX)(BX*1), TMM0", "tileloadd (%rdx,%rbx,1),%tmm0", []byte{0xc4, 0xe2, 0x7b, 0x4b, 0x04, 0x1a}},
		{"TILELOADD (R10)(BX*1), TMM1", "tileloadd (%r10,%rbx,1),%tmm1", []byte{0xc4, 0xc2, 0x7b, 0x4b, 0x0c, 0x1a}},
		{"TILELOADD (DI)(R13*1), TMM6", "tileloadd (%rdi,%r13,1),%tmm6", []byte{0xc4, 0xa2, 0x7b, 0x4b, 0x34, 0x2f}},
		{"TILELOADD (R9)(R13*1), TMM7", "tileloadd (%r9,%r13,1),%tmm7", []byte{0xc4, 0x82, 0x7b, 0x4b, 0x3c, 0x29}},
		{"TDPBF16PS TMM6, TMM4, TMM0", "tdpbf16ps %tmm6,%tmm4,%tmm0", []byte{0xc4, 0xe2, 0x4a, 0x5c, 0xc4}},
		{"TDPBF16PS TMM7, TMM5, TMM3", "tdpbf16ps %tmm7,%tmm5,%tmm3", []byte{0xc4, 0xe2, 0x42, 0x5c, 0xdd}},
		{"TILESTORED TMM0, (DX)(BX*1)", "tilestored %tmm0,(%rdx,%rbx,1)", []byte{0xc4, 0xe2, 0x7a, 0x4b, 0x04, 0x1a}},
		{"TILESTORED TMM3, (R12)(BX*1)", "tilestored %tmm3,(%r12,%rbx,1)", []byte{0xc4, 0xc2, 0x7a, 0x4b, 0x1c, 0x1c}},
		{"TILEZERO TMM3", "tilezero %tmm3", []byte{0xc4, 0xe2, 0x7b, 0x49, 0xd8}},
		{"TILERELEASE", "tilerelease", []byte{0xc4, 0xe2, 0x78, 0x49, 0xc0}},
	} {
		op, args := splitInstruction(c.goSyntax)
		got, err := amxEncode(op, args)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s = % x, %v; want % x (%s)", c.goSyntax, got, err, c.want, c.objdump)
		}
	}
}

func splitInstruction(s string) (string, []string) {
	op, rest, _ := strings.Cut(s, " ")
	var args []string
	for _, a := range strings.Split(rest, ",") {
		if a = strings.TrimSpace(a); a != "" {
			args = append(args, a)
		}
	}
	return op, args
}

// TestAMXEncodings checks every hand-encoded instruction in amx_amd64.s
// against the comment beside it.
func TestAMXEncodings(t *testing.T) {
	f, err := os.Open("amx_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^\s*(BYTE \$0x[0-9A-F]{2}(?:; BYTE \$0x[0-9A-F]{2})*) // (.*)$`)
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var got []byte
		for _, b := range strings.Split(m[1], ";") {
			v, _ := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(b), "BYTE $0x"), 16, 8)
			got = append(got, byte(v))
		}
		op, args := splitInstruction(m[2])
		want, err := amxEncode(op, args)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: % x, want % x (%v)", m[2], got, want, err)
		}
		found++
	}
	if found != 22 {
		t.Errorf("found %d encoded instructions, want 22", found)
	}
}
