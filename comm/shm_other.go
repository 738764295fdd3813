//go:build !linux

package comm

import "errors"

// Shared-memory links are built on Linux only; elsewhere every pair of
// ranks talks over TCP.

var errNoShm = errors.New("shared memory links need Linux")

func hostIdentity() string { return "" }

func createSegment(int) ([]byte, string, []byte, error) { return nil, "", nil, errNoShm }

func openSegment(string, []byte) ([]byte, int, error) { return nil, 0, errNoShm }

func removeSegment(string) {}

func unmapSegment([]byte) func() error { return func() error { return nil } }

func readRemote(int, []byte, uint64) error { return errNoShm }
