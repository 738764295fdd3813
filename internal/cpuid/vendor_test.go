package cpuid

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The vendor read by CPUID is the one the kernel reports.
func TestVendorMatchesProcCPUInfo(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("compares with Linux's /proc/cpuinfo on amd64")
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == "vendor_id" {
			if want := strings.TrimSpace(value); Vendor != want {
				t.Fatalf("Vendor = %q, /proc/cpuinfo says %q", Vendor, want)
			}
			if Intel != (Vendor == "GenuineIntel") || AMD != (Vendor == "AuthenticAMD") {
				t.Fatalf("Intel = %v, AMD = %v for vendor %q", Intel, AMD, Vendor)
			}
			return
		}
	}
	t.Fatal("/proc/cpuinfo has no vendor_id line")
}

// The family read by CPUID is the one the kernel reports.
func TestFamilyMatchesProcCPUInfo(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("compares with Linux's /proc/cpuinfo on amd64")
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == "cpu family" {
			if want := strings.TrimSpace(value); strconv.Itoa(Family) != want {
				t.Fatalf("Family = %d, /proc/cpuinfo says %s", Family, want)
			}
			return
		}
	}
	t.Fatal("/proc/cpuinfo has no cpu family line")
}
