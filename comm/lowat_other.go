//go:build !linux

package comm

import "net"

// sockReader is Linux's low-water-mark reader (lowat_linux.go); elsewhere
// connections read as usual.
type sockReader struct{}

func newSockReader(net.Conn) *sockReader { return nil }

func (*sockReader) readFull([]byte) error { panic("unreachable") }
