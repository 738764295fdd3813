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

// lastLevelCache walks the deterministic cache parameters, CPUID leaf 4 on
// Intel and 0x8000001D on AMD (same layout), and returns the largest data
// or unified cache's size in bytes.
func lastLevelCache() int64 {
	top, _, _, _ := cpuidLeaf(0, 0)
	leaf := uint32(4)
	if Vendor == "AuthenticAMD" {
		leaf = 0x8000001d
		top, _, _, _ = cpuidLeaf(0x80000000, 0)
	}
	if top < leaf {
		return 0
	}
	var best int64
	for sub := uint32(0); sub < 16; sub++ {
		a, b, c, _ := cpuidLeaf(leaf, sub)
		kind := a & 0x1f // 1 data, 2 instruction, 3 unified, 0 no more
		if kind == 0 {
			break
		}
		if kind == 2 {
			continue
		}
		ways, parts, line := int64(b>>22)+1, int64(b>>12&0x3ff)+1, int64(b&0xfff)+1
		best = max(best, ways*parts*line*(int64(c)+1))
	}
	return best
}
