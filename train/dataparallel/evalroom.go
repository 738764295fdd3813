package dataparallel

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/sysstat"
)

// availableMemory bounds what evaluation may take, and evaluations under
// roomFloor bytes are never refused (variables for tests).
var (
	availableMemory       = sysstat.AvailableMemory
	roomFloor       int64 = 64 << 20
)

// roomForEvaluation refuses an evaluation that would take need bytes
// more than the memory available, before it takes them, rather than have
// the process killed for it at the end of an epoch; what says what the
// bytes are, and advice what to do about it.
func roomForEvaluation(need int64, what, advice string) error {
	if need < roomFloor {
		return nil
	}
	if avail, ok := availableMemory(); ok && need > avail {
		return fmt.Errorf("dataparallel: exact evaluation would take %s (%s), more than the %s of memory available; %s",
			gib(need), what, gib(avail), advice)
	}
	return nil
}

func gib(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
