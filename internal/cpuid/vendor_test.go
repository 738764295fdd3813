package cpuid

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// procCPUInfo returns the value of the first line of /proc/cpuinfo named
// field, skipping the test off Linux on amd64.
func procCPUInfo(t *testing.T, field string) string {
	t.Helper()
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("compares with Linux's /proc/cpuinfo on amd64")
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == field {
			return strings.TrimSpace(value)
		}
	}
	t.Fatalf("/proc/cpuinfo has no %s line", field)
	return ""
}

// The vendor read by CPUID is the one the kernel reports.
func TestVendorMatchesProcCPUInfo(t *testing.T) {
	if want := procCPUInfo(t, "vendor_id"); Vendor != want {
		t.Fatalf("Vendor = %q, /proc/cpuinfo says %q", Vendor, want)
	}
	if Intel != (Vendor == "GenuineIntel") || AMD != (Vendor == "AuthenticAMD") {
		t.Fatalf("Intel = %v, AMD = %v for vendor %q", Intel, AMD, Vendor)
	}
}

// The family read by CPUID is the one the kernel reports.
func TestFamilyMatchesProcCPUInfo(t *testing.T) {
	if want := procCPUInfo(t, "cpu family"); strconv.Itoa(Family) != want {
		t.Fatalf("Family = %d, /proc/cpuinfo says %s", Family, want)
	}
}

// The last-level cache read by CPUID is the largest data or unified cache
// the kernel lists for CPU 0.
func TestLastLevelCacheMatchesSysfs(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("compares with Linux's sysfs on amd64")
	}
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var want int64
	for _, d := range dirs {
		kind, err1 := os.ReadFile(filepath.Join(d, "type"))
		size, err2 := os.ReadFile(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil || strings.TrimSpace(string(kind)) == "Instruction" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(size)), "K"), 10, 64)
		if err != nil {
			t.Fatalf("%s/size: %q", d, size)
		}
		want = max(want, kb<<10)
	}
	if want == 0 {
		t.Skip("sysfs lists no caches")
	}
	if LastLevelCache != want {
		t.Fatalf("LastLevelCache = %d, sysfs says %d", LastLevelCache, want)
	}
}
