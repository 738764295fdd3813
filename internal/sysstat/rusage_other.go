//go:build !unix

package sysstat

import "time"

// CPUTime is unknown without getrusage: 0, so that per-CPU-second figures
// read 0 rather than a wall-clock stand-in.
func CPUTime() time.Duration { return 0 }

// rusagePeakRSS is unknown without getrusage.
func rusagePeakRSS() int64 { return 0 }

// MajorFaults is unknown here.
func MajorFaults() int64 { return 0 }
