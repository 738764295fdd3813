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
