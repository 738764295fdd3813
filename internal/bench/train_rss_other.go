//go:build !unix

package bench

// rusagePeakRSS is unknown without getrusage.
func rusagePeakRSS() int64 { return 0 }
