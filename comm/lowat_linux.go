package comm

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
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
// any other (TLS, shared memory), which reads as usual, and on a kernel
// whose marks can leave a read waiting (lowatKernel).
func newSockReader(c net.Conn) *sockReader {
	tc, ok := c.(*net.TCPConn)
	if !ok || !lowatSafe() {
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

// lowatKernel reports whether a kernel of the given release (uname -r)
// wakes a reader whose mark its receive buffer cannot hold. Before Linux
// 4.18 setting the mark did not grow the buffer, so the peer could send
// no more than the window while the reader waited for a mark above it,
// until the peer timeout; before 5.10 a stream of small segments could
// still fill the buffer short of the mark (the kernel's "tcp: fix
// SO_RCVLOWAT hangs with fat skbs"). Older kernels read as usual.
func lowatKernel(release string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 5 || major == 5 && minor >= 10
}

// lowatSafe is lowatKernel of the running kernel.
var lowatSafe = sync.OnceValue(func() bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return lowatKernel(string(b))
})
