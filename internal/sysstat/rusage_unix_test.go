//go:build unix

package sysstat

import (
	"testing"
	"time"
)

func TestCPUTimeCountsWork(t *testing.T) {
	before := CPUTime()
	// Spin until the clock has certainly ticked (getrusage counts in
	// scheduler ticks on some systems).
	x := 1.0
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		for range 1000 {
			x = x*1.0000001 + 1e-9
		}
	}
	if after := CPUTime(); after <= before {
		t.Errorf("CPU time %v after 50 ms of spinning, %v before (x=%g)", after, before, x)
	}
}
