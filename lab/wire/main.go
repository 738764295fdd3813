//go:build linux

package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "wire:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("wire", flag.ContinueOnError)
	hosts := fs.Int("hosts", 4, "number of hosts")
	prefix := fs.String("name", "wire", "device names are NAME0, NAME1, …")
	first := fs.String("first", "10.231.0.10", "address of host 0; host h has this address plus h")
	rate := fs.Float64("rate", 1e9, "link rate in bits per second, each way")
	delay := fs.Duration("delay", time.Millisecond, "one-way delay of a link")
	loss := fs.Float64("loss", 0, "fraction of packets dropped at random")
	queue := fs.Duration("queue", 20*time.Millisecond, "most backlog a link queues before it drops")
	seed := fs.Uint64("seed", 1, "seed of the random losses")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base, err := netip.ParseAddr(*first)
	if err != nil || !base.Is4() {
		return fmt.Errorf("-first %q: want an IPv4 address", *first)
	}
	if *hosts < 2 || *rate <= 0 || *loss < 0 || *loss >= 1 {
		return errors.New("want -hosts ≥ 2, -rate > 0 and -loss in [0, 1)")
	}
	sw := newSwitch(*hosts, base, *rate, *delay, *queue, *loss, *seed)
	devs := make([]*os.File, *hosts)
	for h := range devs {
		if devs[h], err = openTUN(fmt.Sprintf("%s%d", *prefix, h)); err != nil {
			return err
		}
	}
	fmt.Println("ready") // the devices exist; the caller may move and configure them
	for h, d := range devs {
		out := make(chan packet, 4096)
		go deliver(d, out)
		sw.out[h] = out
	}
	for h, d := range devs {
		go sw.receive(h, d)
	}
	go sw.control(os.Stdin, os.Stdout, os.Stderr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	sw.report(os.Stderr)
	return nil
}

// control changes the loss, rate or queue while the switch runs: each line
// "loss F" on in sets the loss to F, "rate R" the rate of every link to R
// bits per second, "queue D" the most backlog a link queues to the
// duration D (as -queue); each logs the counts so far to log and answers
// "ok N" on out (N counts the commands). Tests change the links this way instead
// of restarting the switch, because the kernel can take minutes to remove
// TUN devices that carried heavy traffic, and new ones wait for that.
func (s *switcher) control(in io.Reader, out, log io.Writer) {
	sc := bufio.NewScanner(in)
	for n := 1; sc.Scan(); n++ {
		var v float64
		if _, err := fmt.Sscanf(sc.Text(), "loss %g", &v); err == nil && v >= 0 && v < 1 {
			s.report(log)
			s.mu.Lock()
			s.loss = v
			s.mu.Unlock()
		} else if _, err := fmt.Sscanf(sc.Text(), "rate %g", &v); err == nil && v > 0 {
			s.report(log)
			s.mu.Lock()
			s.bytesPerSecond = v / 8
			s.mu.Unlock()
		} else if q, ok := strings.CutPrefix(sc.Text(), "queue "); ok && positiveDuration(q) {
			s.report(log)
			d, _ := time.ParseDuration(q)
			s.mu.Lock()
			s.queue = d
			s.mu.Unlock()
		} else {
			fmt.Fprintf(out, "error %d: want \"loss F\" with F in [0, 1), \"rate R\" with R > 0 or \"queue D\" with D > 0, got %q\n", n, sc.Text())
			continue
		}
		fmt.Fprintf(out, "ok %d\n", n)
	}
}

func positiveDuration(s string) bool {
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

// report logs what the switch has done so far.
func (s *switcher) report(log io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(log, "wire: rate %g, queue %v, loss %g: forwarded %d packets so far, dropped %d to loss and %d to full queues\n",
		s.bytesPerSecond*8, s.queue, s.loss, s.forwarded, s.lost, s.overflow)
}

// openTUN creates the TUN device name (IP packets, no extra header).
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("device name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("creating TUN device %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

type packet struct {
	at   time.Time // when it leaves the destination's downlink
	data []byte
	buf  *[]byte // data's buffer, back to the pool once written
}

// buffers recycles packet buffers: at a few thousand packets a second,
// fresh 64 KiB buffers would keep the garbage collector busy.
var buffers = sync.Pool{New: func() any { b := make([]byte, 65536); return &b }}

// deliver writes each packet to the device once its time has come; the
// times of one destination never decrease, so a FIFO suffices.
func deliver(dev *os.File, in <-chan packet) {
	for p := range in {
		if d := time.Until(p.at); d > 0 {
			time.Sleep(d)
		}
		dev.Write(p.data) // a host that went away loses the packet, as on a wire
		buffers.Put(p.buf)
	}
}

// receive reads the packets host h sends and forwards them.
func (s *switcher) receive(h int, dev *os.File) {
	for {
		buf := buffers.Get().(*[]byte)
		n, err := dev.Read(*buf)
		if err != nil {
			return
		}
		if !s.forward(h, packet{data: (*buf)[:n], buf: buf}, time.Now()) {
			buffers.Put(buf)
		}
	}
}

// switcher holds the links' state: when each uplink and downlink is next
// free.
type switcher struct {
	mu             sync.Mutex
	first          [4]byte
	bytesPerSecond float64
	delay, queue   time.Duration
	loss           float64
	rng            *rand.Rand
	up, down       []time.Time
	out            []chan packet

	forwarded, lost, overflow int
}

func newSwitch(hosts int, first netip.Addr, bitsPerSecond float64, delay, queue time.Duration, loss float64, seed uint64) *switcher {
	return &switcher{first: first.As4(), bytesPerSecond: bitsPerSecond / 8, delay: delay, queue: queue, loss: loss,
		rng: rand.New(rand.NewPCG(seed, 0x77697265)), up: make([]time.Time, hosts), down: make([]time.Time, hosts),
		out: make([]chan packet, hosts)}
}

// host returns the host an IPv4 packet is addressed to, or −1.
func (s *switcher) host(p []byte) int {
	if len(p) < 20 || p[0]>>4 != 4 {
		return -1
	}
	for i := 0; i < 3; i++ {
		if p[16+i] != s.first[i] {
			return -1
		}
	}
	g := int(p[19]) - int(s.first[3])
	if g < 0 || g >= len(s.down) {
		return -1
	}
	return g
}

// schedule returns when a packet of n bytes that host h sends to host g at
// now leaves g's downlink, and false when a queue on its way is full.
func (s *switcher) schedule(h, g, n int, now time.Time) (time.Time, bool) {
	ser := time.Duration(float64(n) / s.bytesPerSecond * float64(time.Second))
	up := later(now, s.up[h])
	if up.Sub(now) > s.queue {
		return time.Time{}, false
	}
	up = up.Add(ser)
	atSwitch := up.Add(s.delay)
	down := later(atSwitch, s.down[g])
	if down.Sub(atSwitch) > s.queue {
		return time.Time{}, false
	}
	s.up[h], s.down[g] = up, down.Add(ser)
	return s.down[g], true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// forward queues p, sent by host h at now, for its destination and says
// whether it did (false: dropped).
func (s *switcher) forward(h int, p packet, now time.Time) bool {
	g := s.host(p.data)
	if g < 0 || g == h {
		return false // not for another host: a wire has nowhere else to go
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loss > 0 && s.rng.Float64() < s.loss {
		s.lost++
		return false
	}
	at, ok := s.schedule(h, g, len(p.data), now)
	if !ok {
		s.overflow++
		return false
	}
	p.at = at
	// Sending under the lock keeps each destination's packets in time order.
	select {
	case s.out[g] <- p:
		s.forwarded++
		return true
	default:
		s.overflow++
		return false
	}
}
