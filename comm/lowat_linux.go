package comm

import (
	"io"
	"net"
	"os"
	"syscall"
)

// sockReader reads a TCP socket the way io.ReadFull does, except that
// before each wait it sets the socket's low-water mark (SO_RCVLOWAT) to the
// bytes the read still needs, up to wireFrame: the kernel then wakes the
// reader once they are all there, instead of at every segment that
// arrives. A wait only starts when the socket has nothing to read, and the
// mark never exceeds what the read needs, so it asks for no byte the peer
// is not already sending: a header (a heartbeat is one) or the rest of a
// frame. Deadlines and closing work as for any read.
type sockReader struct {
	raw   syscall.RawConn
	lowat int // the mark last set
}

// newSockReader returns a sockReader for a plain TCP connection, nil for
// any other (TLS, shared memory), which reads as usual.
func newSockReader(c net.Conn) *sockReader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &sockReader{raw: raw, lowat: 1}
}

// readFull fills buf, returning io.EOF if the connection ended before the
// first byte and io.ErrUnexpectedEOF if it ended after.
func (s *sockReader) readFull(buf []byte) error {
	for got := 0; got < len(buf); {
		var n int
		var rerr error
		err := s.raw.Read(func(fd uintptr) bool {
			for {
				n, rerr = syscall.Read(int(fd), buf[got:])
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr != syscall.EAGAIN {
				return true
			}
			if want := min(len(buf)-got, wireFrame); want != s.lowat &&
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, want) == nil {
				s.lowat = want
			}
			return false // wait until the socket is readable
		})
		switch {
		case err != nil: // deadline, or closed on this side
			return err
		case rerr != nil:
			return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", rerr)}
		case n == 0 && got == 0:
			return io.EOF
		case n == 0:
			return io.ErrUnexpectedEOF
		}
		got += n
	}
	return nil
}
