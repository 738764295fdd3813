package cpuid

import "encoding/binary"

// cpuidLeaf executes CPUID with EAX = leaf and ECX = sub (vendor_amd64.s).
func cpuidLeaf(leaf, sub uint32) (a, b, c, d uint32)

// vendor is CPUID leaf 0's vendor string: EBX, EDX, ECX as bytes.
func vendor() string {
	_, b, c, d := cpuidLeaf(0, 0)
	var s [12]byte
	binary.LittleEndian.PutUint32(s[0:], b)
	binary.LittleEndian.PutUint32(s[4:], d)
	binary.LittleEndian.PutUint32(s[8:], c)
	return string(s[:])
}

// family decodes CPUID leaf 1's display family.
func family() int {
	a, _, _, _ := cpuidLeaf(1, 0)
	f := int(a>>8) & 0xf
	if f == 0xf {
		f += int(a>>20) & 0xff
	}
	return f
}
