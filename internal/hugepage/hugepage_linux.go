package hugepage

import (
	"bytes"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// enabled reports whether transparent huge pages are on for advised
// memory ("always" or "madvise"); it reads the setting once.
var enabled = sync.OnceValue(func() bool {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !bytes.Contains(mode, []byte("[never]"))
})

func advise(b []byte) { unix.Madvise(b, unix.MADV_HUGEPAGE) }

func collapse(b []byte) {
	if unix.Madvise(b, unix.MADV_COLLAPSE) != nil {
		advise(b)
	}
}
