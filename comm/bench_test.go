package comm

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// Benchmarks with two ranks in one process, over loopback TCP and over
// shared memory (sub-benchmarks tcp/ and shm/); `graft worker bench` under
// `graft launch --nproc 2` measures two real processes. MB/s is the
// algorithmic bandwidth: buffer bytes per second for all-reduce, bytes sent
// per rank per second for all-to-all.

// benchTransports are the links the benchmarks compare.
var benchTransports = []string{TransportTCP, linkShm}

func BenchmarkTCPAllReduce(b *testing.B) {
	for _, tr := range benchTransports {
		for _, mib := range []int{4, 64} {
			b.Run(fmt.Sprintf("%s/%dMiB", tr, mib), func(b *testing.B) {
				comms := meshOver(b, 2, tr)
				n := mib << 20 / 4
				data := [][]float32{make([]float32, n), make([]float32, n)}
				b.SetBytes(int64(4 * n))
				b.ResetTimer()
				errs := onEach(comms, func(c *TCP) error {
					for range b.N {
						if err := c.AllReduce("g", data[c.Rank()]); err != nil {
							return err
						}
					}
					return nil
				})
				if err := firstErr(errs); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

func BenchmarkTCPAllToAll(b *testing.B) {
	for _, tr := range benchTransports {
		for _, mib := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/%dMiB", tr, mib), func(b *testing.B) {
				comms := meshOver(b, 2, tr)
				b.SetBytes(int64(mib << 20))
				b.ResetTimer()
				errs := onEach(comms, func(c *TCP) error {
					send := [][]byte{make([]byte, mib<<20), make([]byte, mib<<20)}
					recv := make([][]byte, 2)
					for range b.N {
						if err := c.AllToAll("x", send, recv); err != nil {
							return err
						}
					}
					return nil
				})
				if err := firstErr(errs); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkRawTCP is the baseline: one connection, 4 MiB writes, no
// framing, one direction. The transport's figures mean most next to it on a
// shared machine.
func BenchmarkRawTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	b.SetBytes(int64(len(buf)))
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	<-done
}
