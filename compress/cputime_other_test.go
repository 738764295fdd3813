//go:build !unix

package compress

import "time"

// cpuTime is not measured here: the cpu-ns/value metric reads 0.
func cpuTime() time.Duration { return 0 }
