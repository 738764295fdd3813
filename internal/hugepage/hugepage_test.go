package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestInteriorIsTheWholeHugePagesInside(t *testing.T) {
	for _, c := range []struct {
		start  uintptr
		n      int
		lo, hi int
	}{
		{0, 4 * Size, 0, 4 * Size},
		{Size, 4*Size + 5, 0, 4 * Size},
		{Size - 1, 4 * Size, 1, 3*Size + 1},
		{Size + 7, Size, Size - 7, Size - 7}, // no whole page
	} {
		if lo, hi := interior(c.start, c.n); lo != c.lo || hi != c.hi {
			t.Errorf("interior(%#x, %d) = [%d, %d), want [%d, %d)", c.start, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestGrowKeepsContentsAndRoom(t *testing.T) {
	b := []byte("abc")
	for _, n := range []int{1, Threshold, 3 * Threshold} {
		g := Grow(b, n)
		if string(g) != "abc" || cap(g)-len(g) < n {
			t.Fatalf("Grow(%q, %d): %q with room %d", b, n, g, cap(g)-len(g))
		}
	}
}

// mapping is the smaps entry of the mapping holding address a: its
// VmFlags and AnonHugePages in kB.
func mapping(t *testing.T, a uintptr) (flags []string, hugeKB int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if r := strings.SplitN(fields[0], "-", 2); len(r) == 2 && !strings.HasSuffix(fields[0], ":") {
			lo, err1 := strconv.ParseUint(r[0], 16, 64)
			hi, err2 := strconv.ParseUint(r[1], 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= lo && uint64(a) < hi
				found = found || in
				continue
			}
		}
		if !in {
			continue
		}
		switch fields[0] {
		case "AnonHugePages:":
			hugeKB, _ = strconv.Atoi(fields[1])
		case "VmFlags:":
			flags = fields[1:]
		}
	}
	if !found {
		t.Fatalf("no mapping holds %#x", a)
	}
	return flags, hugeKB
}

// inFreshProcess runs the calling test again in a new process and reports
// false, unless this is that process. A heap that has served earlier
// allocations reuses memory they touched, which keeps its small pages;
// these tests need memory fresh from the operating system.
func inFreshProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv("HUGEPAGE_TEST_CHILD") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "HUGEPAGE_TEST_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("in a fresh process: %v\n%s", err, out)
	}
	return false
}

func thpMode(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("transparent huge pages are a Linux feature; on %s Advise does nothing", runtime.GOOS)
	}
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Skipf("this kernel offers no transparent huge pages: %v", err)
	}
	s := string(b)
	i, j := strings.Index(s, "["), strings.Index(s, "]")
	if i < 0 || j < i {
		t.Skipf("unreadable transparent huge page mode %q", s)
	}
	return s[i+1 : j]
}

// The check runs in a fresh process, so that the small slices cannot
// land in memory that an earlier test's large slice advised.
func TestSmallSlicesAreNotAdvised(t *testing.T) {
	if mode := thpMode(t); mode == "never" {
		t.Skip("transparent huge pages are off (never): nothing is advised")
	}
	if !inFreshProcess(t) {
		return
	}
	for _, n := range []int{1 << 20, 4<<20 - 1} { // Threshold is 4 MiB
		b := Bytes(n)
		Advise(b)
		flags, _ := mapping(t, uintptr(unsafe.Pointer(&b[len(b)/2])))
		if slices.Contains(flags, "hg") {
			t.Errorf("a %d-byte slice lies in memory advised MADV_HUGEPAGE (VmFlags %v)", n, flags)
		}
		runtime.KeepAlive(b)
	}
}

func TestLargeAllocationGetsHugePages(t *testing.T) {
	mode := thpMode(t)
	if mode != "always" && mode != "madvise" {
		t.Skipf("transparent huge pages are %q: advice has no effect", mode)
	}
	if !inFreshProcess(t) {
		return
	}
	var keep []unsafe.Pointer // nothing is freed, so no slice reuses another's memory
	for _, tc := range []struct {
		name string
		// collapses: the allocator collapses memory the heap had already
		// written (Collapse) and advises only memory not yet written, so
		// its slice may show huge pages without the advice flag.
		collapses bool
		alloc     func(n int) unsafe.Pointer
	}{
		{"Bytes", false, func(n int) unsafe.Pointer {
			b := Bytes(n)
			for i := range b {
				b[i] = 1
			}
			return unsafe.Pointer(&b[n/2])
		}},
		{"Uint16s", true, func(n int) unsafe.Pointer {
			s := Uint16s(n / 2)
			for i := range s {
				s[i] = 1
			}
			return unsafe.Pointer(&s[n/4])
		}},
		{"Float32s", true, func(n int) unsafe.Pointer {
			s := Float32s(n / 4)
			for i := range s {
				s[i] = 1
			}
			return unsafe.Pointer(&s[n/8])
		}},
	} {
		alloc := tc.alloc
		t.Run(tc.name, func(t *testing.T) {
			// Even a fresh process's heap may hand out memory it has
			// already touched, whose small pages advice cannot change at
			// once; each attempt is kept, so the next one is new memory.
			const attempts = 4
			for try := 1; ; try++ {
				p := alloc(16 << 20)
				keep = append(keep, p)
				flags, huge := mapping(t, uintptr(p))
				// The advice is given in both modes, and only advice sets
				// "hg": under "always" the huge pages alone would not show
				// that Advise ran.
				collapsed := tc.collapses && huge > 0
				if !slices.Contains(flags, "hg") && !collapsed {
					t.Fatalf("the slice's mapping is neither advised MADV_HUGEPAGE nor on huge pages (VmFlags %v)", flags)
				}
				if huge > 0 {
					break
				}
				if try == attempts {
					t.Fatalf("%d slices' mappings have AnonHugePages 0 kB after they were advised and touched (VmFlags %v)", attempts, flags)
				}
			}
		})
	}
	runtime.KeepAlive(keep)
}

// Collapse moves memory that is already written to huge pages (Linux 6.1
// and later), keeping its contents; an older kernel gets the advice.
func TestCollapseMovesWrittenMemory(t *testing.T) {
	mode := thpMode(t)
	if mode != "always" && mode != "madvise" {
		t.Skipf("transparent huge pages are %q: nothing is collapsed", mode)
	}
	if !inFreshProcess(t) {
		return
	}
	s := make([]int32, 8<<20) // 32 MiB, written before the call as a loaded graph is
	for i := range s {
		s[i] = int32(i)
	}
	Collapse(s)
	for i, v := range s {
		if v != int32(i) {
			t.Fatalf("s[%d] = %d after Collapse, want %d", i, v, i)
		}
	}
	flags, huge := mapping(t, uintptr(unsafe.Pointer(&s[len(s)/2])))
	if collapses(t) {
		if huge < 16<<10 { // at least half the slice, in kB
			t.Fatalf("AnonHugePages %d kB after collapsing a 32 MiB slice (VmFlags %v)", huge, flags)
		}
	} else if !slices.Contains(flags, "hg") {
		t.Fatalf("a kernel without MADV_COLLAPSE: the slice is not advised either (VmFlags %v)", flags)
	}
	runtime.KeepAlive(s)
}

// collapses reports whether the kernel has MADV_COLLAPSE (Linux 6.1).
func collapses(t *testing.T) bool {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Skipf("unknown kernel release: %v", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(b), "%d.%d", &major, &minor); err != nil {
		t.Skipf("unreadable kernel release %q", b)
	}
	return major > 6 || major == 6 && minor >= 1
}

// Memory the heap reuses, which an earlier allocation wrote on small
// pages, still ends up on huge pages (on kernels that collapse).
func TestReusedMemoryGetsHugePages(t *testing.T) {
	mode := thpMode(t)
	if mode != "always" && mode != "madvise" {
		t.Skipf("transparent huge pages are %q", mode)
	}
	if !collapses(t) {
		t.Skip("a kernel without MADV_COLLAPSE: reused memory keeps its pages until khugepaged merges them")
	}
	if !inFreshProcess(t) {
		return
	}
	const n = 16 << 20
	for try := range 4 {
		old := make([]byte, n) // plain make: small pages
		for i := range old {
			old[i] = byte(i)
		}
		runtime.KeepAlive(old)
		old = nil
		runtime.GC()
		s := Float32s(n / 4)
		for i := range s {
			s[i] = 1
		}
		flags, huge := mapping(t, uintptr(unsafe.Pointer(&s[len(s)/2])))
		if huge == 0 {
			t.Fatalf("attempt %d: AnonHugePages 0 kB in a Float32s slice (VmFlags %v)", try, flags)
		}
		runtime.KeepAlive(s)
	}
}
