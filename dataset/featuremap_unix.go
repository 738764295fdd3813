//go:build unix

package dataset

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const mmapSupported = true

// mapFile maps the first size bytes of f read-only, advising random access.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size != int64(int(size)) {
		return nil, errors.New("the file is larger than this system's address space")
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	unix.Madvise(b, unix.MADV_RANDOM) // advice: its failure changes nothing
	return b, nil
}

func unmap(b []byte) error { return unix.Munmap(b) }

// adviseWillNeed asks for b's pages (b starts on a page boundary).
func adviseWillNeed(b []byte) { unix.Madvise(b, unix.MADV_WILLNEED) }
