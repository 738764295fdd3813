package comm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Link models a network link per worker: a full-duplex interface of the
// given bandwidth and a per-message latency.
type Link struct {
	BytesPerSecond float64
	Latency        time.Duration
}

// ParseLink reads a link such as "1gbit:1ms", "10gbit:50us", "100mbit" or
// "2GB:0.5ms" (bits per second with k/m/g, or bytes per second with K/M/G B).
func ParseLink(s string) (Link, error) {
	rate, lat, _ := strings.Cut(s, ":")
	var l Link
	if lat != "" {
		d, err := time.ParseDuration(lat)
		if err != nil || d < 0 {
			return Link{}, fmt.Errorf("link %q: latency %q is not a duration like 1ms", s, lat)
		}
		l.Latency = d
	}
	lower := strings.ToLower(rate)
	mult := 0.0
	var num string
	switch {
	case strings.HasSuffix(lower, "bit"):
		num = lower[:len(lower)-3]
		mult = 1.0 / 8
	case strings.HasSuffix(rate, "B"):
		num = rate[:len(rate)-1]
		mult = 1
	default:
		return Link{}, fmt.Errorf("link %q: rate %q needs a unit, e.g. 1gbit or 100MB", s, rate)
	}
	if n := len(num); n > 0 {
		switch num[n-1] {
		case 'k', 'K':
			mult *= 1e3
			num = num[:n-1]
		case 'm', 'M':
			mult *= 1e6
			num = num[:n-1]
		case 'g', 'G':
			mult *= 1e9
			num = num[:n-1]
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	bps := v * mult
	if err != nil || !(bps > 0) || math.IsInf(bps, 0) { // also NaN, and rates that round to 0
		return Link{}, fmt.Errorf("link %q: rate %q is not a positive number with a unit", s, rate)
	}
	l.BytesPerSecond = bps
	return l, nil
}

func (l Link) String() string {
	return fmt.Sprintf("%.3g Gbit/s, %v latency", l.BytesPerSecond*8/1e9, l.Latency)
}

// WithLink wraps c so that each call also adds, to c's Stats, the time the
// link would have taken for the bytes the call moved. The data still moves
// at c's own speed; only the accounting changes.
// It keeps c's own all-to-all of rows, if c has one (see Rows).
func WithLink(c Communicator, l Link) Communicator {
	lc := &linked{Communicator: c, link: l}
	if rs, ok := c.(rowSender); ok {
		return linkedRows{lc, rs}
	}
	return lc
}

type linked struct {
	Communicator
	link Link
}

func (c *linked) transfer(bytes int64) float64 {
	return float64(bytes) / c.link.BytesPerSecond
}

func (c *linked) AllToAll(site string, send, recv [][]byte) error {
	if err := c.Communicator.AllToAll(site, send, recv); err != nil {
		return err
	}
	c.allToAllTime(site, func(p int) int { return len(send[p]) }, recv)
	return nil
}

// allToAllTime adds the emulated time of an all-to-all that sent sent(p)
// bytes to each peer p and received recv.
func (c *linked) allToAllTime(site string, sent func(p int) int, recv [][]byte) {
	var in int64
	for p := range recv {
		if p != c.Rank() {
			in += int64(len(recv[p]))
		}
	}
	c.addTime(site, sent, in)
}

// addTime adds the emulated time of an all-to-all that sent sent(p)
// bytes to each peer p and received in bytes in all.
func (c *linked) addTime(site string, sent func(p int) int, in int64) {
	var out int64
	for p := range c.Size() {
		if p != c.Rank() {
			out += int64(sent(p))
		}
	}
	// Sends leave through one interface one after another; receives arrive
	// in parallel on the other direction of the full-duplex link.
	t := c.link.Latency.Seconds() + max(c.transfer(out), c.transfer(in))
	c.Stats().addEmulated(site, t)
}

// linkedRows is a linked rowSender.
type linkedRows struct {
	*linked
	rows rowSender
}

func (c linkedRows) AllToAllRows(site string, src []byte, size int, at [][]int32, recv [][]byte) error {
	if err := c.rows.AllToAllRows(site, src, size, at, recv); err != nil {
		return err
	}
	c.allToAllTime(site, func(p int) int { return len(at[p]) * size }, recv)
	return nil
}

func (c linkedRows) AllToAllPull(site string, rows []int, size int, write func(p, lo, hi int, dst []byte), visit func(p, n int, read func(lo, hi int, dst []byte))) error {
	var in int64
	err := c.rows.AllToAllPull(site, rows, size, write, func(p, n int, read func(lo, hi int, dst []byte)) {
		in += int64(n * size)
		visit(p, n, read)
	})
	if err != nil {
		return err
	}
	c.addTime(site, func(p int) int { return rows[p] * size }, in)
	return nil
}

func (c linkedRows) Share(site string, h Holder, size int) ([]byte, int, error) {
	return c.rows.Share(site, h, size)
}

func (c linkedRows) Unshare(site string, h Holder) int { return c.rows.Unshare(site, h) }

func (c linkedRows) AllToAllShared(site string, sent, recvd []int) error {
	if err := c.rows.AllToAllShared(site, sent, recvd); err != nil {
		return err
	}
	var in int64
	for p, n := range recvd {
		if p != c.Rank() {
			in += int64(n)
		}
	}
	c.addTime(site, func(p int) int { return sent[p] }, in)
	return nil
}

func (c linkedRows) AllToAllVisit(site string, send [][]byte, visit func(p int, msg []byte)) error {
	var in int64
	err := c.rows.AllToAllVisit(site, send, func(p int, msg []byte) {
		in += int64(len(msg))
		visit(p, msg)
	})
	if err != nil {
		return err
	}
	c.addTime(site, func(p int) int { return len(send[p]) }, in)
	return nil
}

func (c *linked) AllReduce(site string, data []float32) error {
	if err := c.Communicator.AllReduce(site, data); err != nil {
		return err
	}
	n := c.Size()
	if n > 1 {
		// Ring all-reduce: 2(N−1) steps, each moving 1/N of the buffer.
		steps := float64(2 * (n - 1))
		t := steps*c.link.Latency.Seconds() + steps*c.transfer(int64(4*len(data)))/float64(n)
		c.Stats().addEmulated(site, t)
	}
	return nil
}

func (c *linked) Broadcast(site string, root int, data []byte) error {
	if err := c.Communicator.Broadcast(site, root, data); err != nil {
		return err
	}
	if n := c.Size(); n > 1 {
		t := c.link.Latency.Seconds() + float64(n-1)*c.transfer(int64(len(data)))
		c.Stats().addEmulated(site, t)
	}
	return nil
}

func (c *linked) Barrier(site string) error {
	if err := c.Communicator.Barrier(site); err != nil {
		return err
	}
	if c.Size() > 1 {
		c.Stats().addEmulated(site, 2*c.link.Latency.Seconds())
	}
	return nil
}

// Send adds the link's time for one message: its latency and its bytes.
func (c *linked) Send(site string, to int, msg []byte) error {
	if err := c.Communicator.Send(site, to, msg); err != nil {
		return err
	}
	if to != c.Rank() {
		c.Stats().addEmulated(site, c.link.Latency.Seconds()+c.transfer(int64(len(msg))))
	}
	return nil
}
