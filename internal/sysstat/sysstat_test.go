package sysstat

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestStatusKiB(t *testing.T) {
	status := []byte("Name:\tsysstat.test\nVmPeak:\t  812345 kB\nVmHWM:\t   20480 kB\nVmRSS:\t\n")
	for _, c := range []struct {
		key  string
		want int64
		ok   bool
	}{
		{"VmHWM:", 20480, true},
		{"VmPeak:", 812345, true},
		{"VmRSS:", 0, false},  // present, but no value
		{"VmSwap:", 0, false}, // absent
		{"Name:", 0, false},   // not a number
	} {
		got, ok := statusKiB(status, c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("statusKiB(%q) = %d, %v; want %d, %v", c.key, got, ok, c.want, c.ok)
		}
	}
}

var sink []byte

func TestPeakRSSFollowsMemory(t *testing.T) {
	before := PeakRSS()
	if before == 0 {
		t.Skip("peak RSS is unknown on this system")
	}
	const size = 64 << 20
	sink = make([]byte, size)
	for i := range sink {
		sink[i] = 1 // touch every page, so that it is resident
	}
	peak := PeakRSS()
	if peak < size {
		t.Errorf("peak RSS %d B after touching %d B", peak, size)
	}
	sink = nil
	runtime.GC()
	debug.FreeOSMemory() // give the pages back, so that the current RSS is below the peak
	if !ResetPeakRSS() {
		t.Log("this system cannot reset the peak; not checking the reset")
		return
	}
	if after := PeakRSS(); after >= peak {
		t.Errorf("peak RSS %d B after freeing %d B and a reset, %d B before: the reset did not lower it", after, size, peak)
	}
}

func TestCgroupRoom(t *testing.T) {
	if p := cgroupPath([]byte("12:cpu:/x\n0::/job/graft\n")); p != "/job/graft" {
		t.Errorf("cgroupPath = %q", p)
	}
	if room, ok := cgroupRoom([]byte("1000\n"), []byte("300\n")); room != 700 || !ok {
		t.Errorf("cgroupRoom = %d, %v", room, ok)
	}
	if _, ok := cgroupRoom([]byte("max\n"), []byte("300\n")); ok {
		t.Error("an unlimited cgroup has a limit")
	}
	if n, ok := AvailableMemory(); ok && n <= 0 {
		t.Errorf("AvailableMemory = %d", n)
	}
}
