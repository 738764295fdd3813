//go:build !unix

package dataset

import (
	"errors"
	"os"
)

const mmapSupported = false

func mapFile(f *os.File, size int64) ([]byte, error) {
	return nil, errors.New("mapping files is not supported on this system")
}

func unmap(b []byte) error    { return nil }
func adviseWillNeed(b []byte) {}
