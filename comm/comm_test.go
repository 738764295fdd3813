package comm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAllToAllDeliversEveryBufferAndCountsBytes(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5} {
		// payload(s, d) is what rank s sends to rank d, of a varying length.
		payload := func(s, d, step int) []byte {
			b := make([]byte, (s*7+d*3+step)%11)
			for i := range b {
				b[i] = byte(s*31 + d*17 + step + i)
			}
			return b
		}
		g := NewGroup(size)
		err := runGroup(g, func(c Communicator) error {
			recv := make([][]byte, size)
			var wantSent, wantRecv int64
			for step := range 4 {
				send := make([][]byte, size)
				for d := range size {
					send[d] = payload(c.Rank(), d, step)
					if d != c.Rank() {
						wantSent += int64(len(send[d]))
						wantRecv += int64(len(payload(d, c.Rank(), step)))
					}
				}
				if err := c.AllToAll("x", send, recv); err != nil {
					return err
				}
				for s := range size {
					if want := payload(s, c.Rank(), step); string(recv[s]) != string(want) {
						return fmt.Errorf("step %d: from %d got %v, want %v", step, s, recv[s], want)
					}
				}
			}
			st := c.Stats().Site("x")
			if st.Calls != 4 || st.BytesSent != wantSent || st.BytesReceived != wantRecv {
				return fmt.Errorf("stats %+v, want 4 calls, %d sent, %d received", st, wantSent, wantRecv)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
	}
}

func runGroup(g *Group, fn func(c Communicator) error) error {
	errs := make(chan error, g.size)
	for r := range g.size {
		go func() { errs <- fn(g.Comm(r)) }()
	}
	var first error
	for range g.size {
		if err := <-errs; err != nil && first == nil {
			first = err
			g.Abort(err)
		}
	}
	return first
}

// referenceSum is the canonical summation order written out plainly: value
// i lies in round i/(size·chunk); within the round's m values, chunk k covers
// [m·k/size, m·(k+1)/size), and its sum starts at rank k and goes round.
func referenceSum(inputs [][]float32) []float32 {
	size, n := len(inputs), len(inputs[0])
	out := make([]float32, n)
	for i := range out {
		round := i / (size * ringChunkValues)
		lo := round * size * ringChunkValues
		m := min(n, lo+size*ringChunkValues) - lo
		k := 0
		for (k+1) < size && i-lo >= m*(k+1)/size {
			k++
		}
		acc := inputs[k][i]
		for j := 1; j < size; j++ {
			acc += inputs[(k+j)%size][i]
		}
		out[i] = acc
	}
	return out
}

func randomInputs(size, n int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, seed))
	inputs := make([][]float32, size)
	for i := range inputs {
		inputs[i] = make([]float32, n)
		for j := range inputs[i] {
			inputs[i][j] = float32(r.NormFloat64() * 1e3)
		}
	}
	return inputs
}

func TestAllReduceSumsInCanonicalOrder(t *testing.T) {
	cases := []struct{ size, n int }{
		{1, 7}, {2, 1}, {3, 2}, {4, 1001}, {3, 3*ringChunkValues + 17}, {2, 2 * ringChunkValues},
	}
	for _, tc := range cases {
		inputs := randomInputs(tc.size, tc.n, uint64(tc.size*1000+tc.n))
		want := referenceSum(inputs)
		err := Run(tc.size, func(c Communicator) error {
			data := append([]float32(nil), inputs[c.Rank()]...)
			if err := c.AllReduce("g", data); err != nil {
				return err
			}
			for j := range data {
				if data[j] != want[j] {
					return fmt.Errorf("rank %d: [%d] = %v, want %v exactly", c.Rank(), j, data[j], want[j])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("size %d, n %d: %v", tc.size, tc.n, err)
		}
	}
}

func TestAllReduceLengthMismatchIsAnError(t *testing.T) {
	err := Run(2, func(c Communicator) error {
		return c.AllReduce("g", make([]float32, 3+c.Rank()))
	})
	if err == nil {
		t.Fatal("mismatched lengths accepted")
	}
}

func TestBroadcastAndBarrier(t *testing.T) {
	err := Run(3, func(c Communicator) error {
		data := make([]byte, 5)
		if c.Rank() == 1 {
			copy(data, "hello")
		}
		if err := c.Broadcast("b", 1, data); err != nil {
			return err
		}
		if string(data) != "hello" {
			return fmt.Errorf("rank %d got %q", c.Rank(), data)
		}
		return c.Barrier("end")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A failing rank must not leave its peers waiting: they return promptly and
// Run reports the failure itself, not the peers' aborts.
func TestFailureAbortsPeersInsteadOfHanging(t *testing.T) {
	boom := errors.New("boom")
	done := make(chan error, 1)
	go func() {
		done <- Run(4, func(c Communicator) error {
			if c.Rank() == 2 {
				return boom
			}
			data := make([]float32, 10)
			for {
				if err := c.AllReduce("g", data); err != nil {
					return err
				}
			}
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Run returned %v, want the root cause", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("peers hung after a rank failed")
	}
}

func TestParseLink(t *testing.T) {
	cases := []struct {
		in      string
		bps     float64
		latency time.Duration
		bad     bool
	}{
		{in: "1gbit:1ms", bps: 125e6, latency: time.Millisecond},
		{in: "10gbit:50us", bps: 1.25e9, latency: 50 * time.Microsecond},
		{in: "100mbit", bps: 12.5e6},
		{in: "2GB:0.5ms", bps: 2e9, latency: 500 * time.Microsecond},
		{in: "fast", bad: true}, {in: "1gbit:soon", bad: true}, {in: "-1gbit", bad: true}, {in: "0gbit", bad: true},
		{in: "nangbit", bad: true}, {in: "NaNB", bad: true}, {in: "1e308GB", bad: true}, {in: "infbit", bad: true}, {in: "5e-324bit", bad: true},
	}
	for _, c := range cases {
		l, err := ParseLink(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q accepted", c.in)
			}
			continue
		}
		if err != nil || l.BytesPerSecond != c.bps || l.Latency != c.latency {
			t.Errorf("%q = %+v, %v; want %v B/s, %v", c.in, l, err, c.bps, c.latency)
		}
	}
}

func TestLinkEmulatesTransferTime(t *testing.T) {
	link := Link{BytesPerSecond: 1e6, Latency: time.Millisecond}
	err := Run(2, func(c Communicator) error {
		lc := WithLink(c, link)
		send := [][]byte{make([]byte, 1000), make([]byte, 1000)}
		recv := make([][]byte, 2)
		if err := lc.AllToAll("halo", send, recv); err != nil {
			return err
		}
		if err := lc.AllReduce("grad", make([]float32, 250)); err != nil {
			return err
		}
		// 1 ms latency + 1000 B at 1 MB/s.
		if got := c.Stats().Site("halo").EmulatedSeconds; abs(got-0.002) > 1e-12 {
			return fmt.Errorf("halo emulated %v s, want 0.002", got)
		}
		// Ring of 2: 2 steps × (1 ms + 500 B at 1 MB/s).
		if got := c.Stats().Site("grad").EmulatedSeconds; abs(got-0.003) > 1e-12 {
			return fmt.Errorf("grad emulated %v s, want 0.003", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Rows delivers what AllToAll delivers for the messages built from the
// rows, counts the same bytes, with the group's own exchange (kept through
// WithLink, with the same emulated time) and with the fallback every other
// transport gets; rows outside the buffer are an error, not a panic.
func TestAllToAllRowsEqualsAllToAllOfTheRows(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		testAllToAllRows(t, fallback)
	}
}

// plain hides a communicator's own all-to-all of rows.
type plain struct{ Communicator }

func testAllToAllRows(t *testing.T, fallback bool) {
	const size, rowBytes, rows = 4, 3, 6
	link := Link{BytesPerSecond: 1e6, Latency: time.Millisecond}
	err := Run(size, func(c Communicator) error {
		me := c.Rank()
		src := make([]byte, rows*rowBytes)
		for i := range src {
			src[i] = byte(me*50 + i)
		}
		// Peer p reads rows p, p+1, …, wrapping, p+1 of them (some
		// twice), so lists differ in length and overlap.
		at := make([][]int32, size)
		send := make([][]byte, size)
		for p := range size {
			if p == me {
				at[p] = []int32{0} // ignored
				continue
			}
			for i := range p + 1 {
				r := int32((p + i) % rows)
				at[p] = append(at[p], r)
				send[p] = append(send[p], src[int(r)*rowBytes:(int(r)+1)*rowBytes]...)
			}
		}
		var base Communicator = c
		if fallback {
			base = plain{c}
		}
		lc := WithLink(base, link)
		if _, own := lc.(rowSender); own == fallback {
			return fmt.Errorf("fallback %v, but the linked communicator has its own rows exchange: %v", fallback, own)
		}
		exchange := Rows(lc)
		got, want := make([][]byte, size), make([][]byte, size)
		if err := exchange("rows", src, rowBytes, at, got); err != nil {
			return err
		}
		if err := lc.AllToAll("msgs", send, want); err != nil {
			return err
		}
		for p := range size {
			if string(got[p]) != string(want[p]) {
				return fmt.Errorf("rank %d from %d: got %v, want %v", me, p, got[p], want[p])
			}
		}
		a, b := c.Stats().Site("rows"), c.Stats().Site("msgs")
		if a.BytesSent != b.BytesSent || a.BytesReceived != b.BytesReceived || a.BytesSent == 0 || a.EmulatedSeconds != b.EmulatedSeconds {
			return fmt.Errorf("rank %d: rows %+v, messages %+v", me, a, b)
		}
		at[(me+1)%size] = []int32{rows}
		if err := exchange("bad", src, rowBytes, at, got); err == nil || !strings.Contains(err.Error(), "row 6 of a 6-row buffer") {
			return fmt.Errorf("rank %d: a row past the buffer gave %v", me, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Ranks that call different collectives would wait for each other forever:
// the watchdog aborts the group once one has waited past the deadline, and
// every rank's error says which ranks are in which collective.
func TestWatchdogNamesEachRanksCollective(t *testing.T) {
	g := NewGroup(4)
	stop := g.Watch(50 * time.Millisecond)
	defer stop()
	errs := make(chan error, 4)
	for r := range 4 {
		go func() {
			c := g.Comm(r)
			var err error
			switch r {
			case 1:
				err = c.AllReduce("grad", make([]float32, 3))
			case 3:
				err = c.Broadcast("stop", 3, make([]byte, 2))
			default:
				err = c.AllToAll("halo", make([][]byte, 4), make([][]byte, 4))
			}
			errs <- err
		}()
	}
	for range 4 {
		select {
		case err := <-errs:
			if err == nil || !strings.Contains(err.Error(), "ranks 0, 2 in AllToAll(halo); rank 1 in AllReduce(grad); rank 3 in Broadcast(stop)") {
				t.Errorf("error %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a rank still waits 10 s after the deadline")
		}
	}
}

// A rank whose peer sends data for another collective fails at once,
// naming both.
func TestGroupRefusesAnotherCollectivesData(t *testing.T) {
	g := NewGroup(2)
	err := runGroup(g, func(c Communicator) error {
		if c.Rank() == 0 {
			return c.AllToAll("halo", make([][]byte, 2), make([][]byte, 2))
		}
		return c.Broadcast("resume", 0, nil)
	})
	if err == nil || !strings.Contains(err.Error(), "rank 1 is in Broadcast(resume), but rank 0 sent it data for AllToAll(halo)") {
		t.Fatalf("error %v", err)
	}
}

// Ranks that meet at the group's barrier from different collectives, or
// from one kind at different sites, fail at once with an error naming
// both: the collectives that are a barrier (Barrier, AllToAllShared,
// Share, and AllReduce's two) would otherwise pass each other.
func TestGroupBarrierRefusesAnotherCollective(t *testing.T) {
	shared := func(c Communicator) error {
		d, _ := DirectOf(c)
		return d.AllToAllShared("halo", make([]int, 2), make([]int, 2))
	}
	share := func(c Communicator) error {
		d, _ := DirectOf(c)
		_, _, err := d.Share("buffers", NewHolder(), 8)
		return err
	}
	for _, tc := range []struct {
		name     string
		calls    [2]func(c Communicator) error
		in0, in1 string
	}{
		{"all-reduce and all-to-all", [2]func(Communicator) error{
			func(c Communicator) error { return c.AllReduce("grad", make([]float32, 3)) }, shared},
			"AllReduce(grad)", "AllToAllShared(halo)"},
		{"barrier and all-to-all", [2]func(Communicator) error{
			func(c Communicator) error { return c.Barrier("stop") }, shared},
			"Barrier(stop)", "AllToAllShared(halo)"},
		{"share and barrier", [2]func(Communicator) error{
			share, func(c Communicator) error { return c.Barrier("stop") }},
			"Share(buffers)", "Barrier(stop)"},
		{"two sites", [2]func(Communicator) error{
			func(c Communicator) error { return c.Barrier("epoch") },
			func(c Communicator) error { return c.Barrier("stop") }},
			"Barrier(epoch)", "Barrier(stop)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroup(2)
			defer g.Watch(2 * time.Second)() // without the check, a rank left waiting fails here
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for r := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = tc.calls[r](g.Comm(r))
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), "same order") || strings.Contains(err.Error(), "waited more than") ||
					!strings.Contains(err.Error(), "rank 0 is in "+tc.in0) || !strings.Contains(err.Error(), "rank 1 is in "+tc.in1) {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// AllToAllVisit hands every peer's message to the visitor in rank order,
// where the peer holds it (no copy), with AllToAll's bytes and emulated
// time; a plain transport has no such exchange.
func TestAllToAllVisitEqualsAllToAll(t *testing.T) {
	const size = 4
	link := Link{BytesPerSecond: 1e6, Latency: time.Millisecond}
	buffers := make([][][]byte, size) // buffers[me][p]: what me sends p
	err := Run(size, func(c Communicator) error {
		me := c.Rank()
		send := make([][]byte, size)
		for p := range size {
			for i := range 3*p + me + 1 {
				send[p] = append(send[p], byte(me*40+p*7+i))
			}
		}
		buffers[me] = send
		if _, ok := DirectOf(plain{c}); ok {
			return fmt.Errorf("a plain communicator is Direct")
		}
		d, ok := DirectOf(WithLink(c, link))
		if !ok {
			return fmt.Errorf("the linked in-process communicator is not Direct")
		}
		var order []int
		err := d.AllToAllVisit("visit", send, func(p int, msg []byte) {
			order = append(order, p)
			if want := buffers[p][me]; len(msg) != len(want) || &msg[0] != &want[0] {
				t.Errorf("rank %d from %d: a message of %d bytes that is not the sender's buffer", me, p, len(msg))
			}
		})
		if err != nil {
			return err
		}
		if want := slices.DeleteFunc([]int{0, 1, 2, 3}, func(p int) bool { return p == me }); !slices.Equal(order, want) {
			return fmt.Errorf("rank %d visited %v, want %v", me, order, want)
		}
		recv := make([][]byte, size)
		if err := WithLink(c, link).AllToAll("msgs", send, recv); err != nil {
			return err
		}
		a, b := c.Stats().Site("visit"), c.Stats().Site("msgs")
		if a.BytesSent != b.BytesSent || a.BytesReceived != b.BytesReceived || a.BytesSent == 0 || a.EmulatedSeconds != b.EmulatedSeconds {
			return fmt.Errorf("rank %d: visit %+v, messages %+v", me, a, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// AllToAllPull hands every peer's message to the visitor in rank order,
// each row made by its sender's function as the receiver reads it, with
// AllToAll's bytes and emulated time.
func TestAllToAllPullEqualsAllToAll(t *testing.T) {
	const size, rowBytes = 4, 3
	link := Link{BytesPerSecond: 1e6, Latency: time.Millisecond}
	row := func(from, to, i int) []byte { return []byte{byte(from), byte(to), byte(i)} }
	err := Run(size, func(c Communicator) error {
		me := c.Rank()
		rows := make([]int, size)
		send := make([][]byte, size)
		for p := range size {
			rows[p] = 2*p + me + 1
			for i := range rows[p] {
				send[p] = append(send[p], row(me, p, i)...)
			}
		}
		d, ok := DirectOf(WithLink(c, link))
		if !ok {
			return fmt.Errorf("the linked in-process communicator is not Direct")
		}
		got := make([][]byte, size)
		var order []int
		err := d.AllToAllPull("pull", rows, rowBytes, func(p, lo, hi int, dst []byte) {
			for i := lo; i < hi; i++ {
				copy(dst[(i-lo)*rowBytes:], row(me, p, i))
			}
		}, func(p, n int, read func(lo, hi int, dst []byte)) {
			order = append(order, p)
			got[p] = make([]byte, n*rowBytes)
			for lo := 0; lo < n; lo += 2 { // two rows at a time
				hi := min(lo+2, n)
				read(lo, hi, got[p][lo*rowBytes:hi*rowBytes])
			}
		})
		if err != nil {
			return err
		}
		if want := slices.DeleteFunc([]int{0, 1, 2, 3}, func(p int) bool { return p == me }); !slices.Equal(order, want) {
			return fmt.Errorf("rank %d visited %v, want %v", me, order, want)
		}
		want := make([][]byte, size)
		if err := WithLink(c, link).AllToAll("msgs", send, want); err != nil {
			return err
		}
		for p := range size {
			if p != me && string(got[p]) != string(want[p]) {
				return fmt.Errorf("rank %d from %d: pulled %v, sent %v", me, p, got[p], want[p])
			}
		}
		a, b := c.Stats().Site("pull"), c.Stats().Site("msgs")
		if a.BytesSent != b.BytesSent || a.BytesReceived != b.BytesReceived || a.BytesSent == 0 || a.EmulatedSeconds != b.EmulatedSeconds {
			return fmt.Errorf("rank %d: pull %+v, messages %+v", me, a, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Share hands every rank the same buffer, kept for the site's next calls
// and grown once for the group; what the ranks write before
// AllToAllShared every rank reads after it, and the barrier is counted as
// an AllToAll of the sizes given, emulated time included.
func TestShareAndAllToAllShared(t *testing.T) {
	const size = 3
	link := Link{BytesPerSecond: 1e6, Latency: time.Millisecond}
	var grew [size]int
	err := Run(size, func(c Communicator) error {
		me := c.Rank()
		if _, ok := DirectOf(plain{c}); ok {
			return fmt.Errorf("a plain communicator is Direct")
		}
		d, _ := DirectOf(WithLink(c, link))
		h := NewHolder()
		b, g1, err := d.Share("buf", h, 8*size)
		if err != nil {
			return err
		}
		b2, g2, err := d.Share("buf", h, 4*size) // smaller: the same buffer
		if err != nil {
			return err
		}
		grew[me] = g1 + g2
		if &b2[0] != &b[0] || len(b2) != 4*size {
			return fmt.Errorf("rank %d: a second, smaller Share gave another buffer", me)
		}
		b[8*me] = byte(10 + me)
		sent, recvd := make([]int, size), make([]int, size)
		send, want := make([][]byte, size), make([][]byte, size)
		for p := range size {
			sent[p], recvd[p] = 5*p+me+1, 5*me+p+1
			send[p] = make([]byte, sent[p])
		}
		if err := d.AllToAllShared("shared", sent, recvd); err != nil {
			return err
		}
		for p := range size {
			if b[8*p] != byte(10+p) {
				return fmt.Errorf("rank %d reads %d where rank %d wrote %d", me, b[8*p], p, 10+p)
			}
		}
		if err := WithLink(c, link).AllToAll("msgs", send, want); err != nil {
			return err
		}
		a, m := c.Stats().Site("shared"), c.Stats().Site("msgs")
		if a.BytesSent != m.BytesSent || a.BytesReceived != m.BytesReceived || a.BytesSent == 0 || a.EmulatedSeconds != m.EmulatedSeconds {
			return fmt.Errorf("rank %d: shared %+v, messages %+v", me, a, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total := grew[0] + grew[1] + grew[2]; total != 8*size || slices.Max(grew[:]) != total {
		t.Errorf("the ranks report growth %v; want %d bytes, by one of them", grew, 8*size)
	}
}

// Share's buffer stays the group's while a holder holds it: the holders
// that give it back (Unshare) learn nothing, and the last one its size,
// once; a holder that shares the site again takes hold of the group's
// buffer again while another holds it, and of a new one, counted as grown,
// once every holder has given it back.
func TestShareUntilEveryHolderUnshares(t *testing.T) {
	const size = 3
	g := NewGroup(size)
	d := make([]Direct, size)
	h := make([]Holder, size)
	for r := range size {
		d[r], _ = DirectOf(g.Comm(r))
		h[r] = NewHolder()
	}
	first := shareAll(t, g, d, h, 64)
	if n := d[0].Unshare("s", h[0]) + d[1].Unshare("s", h[1]) + d[1].Unshare("s", h[1]); n != 0 {
		t.Fatalf("ranks 0 and 1 freed %d bytes while rank 2 holds the buffer", n)
	}
	again := shareAll(t, g, d, h, 0)
	if &again[0][0] != &first[0][0] || &again[2][0] != &first[0][0] {
		t.Fatal("the group's buffer changed while rank 2 held it")
	}
	for r := range size - 1 {
		if n := d[r].Unshare("s", h[r]); n != 0 {
			t.Fatalf("rank %d freed %d bytes while rank 2 holds the buffer", r, n)
		}
	}
	if n := d[2].Unshare("s", h[2]); n != 64 {
		t.Fatalf("the last rank to give the buffer back freed %d bytes, want 64", n)
	}
	if n := d[2].Unshare("s", h[2]) + d[0].Unshare("other", h[0]); n != 0 {
		t.Fatalf("giving back a buffer not held freed %d bytes", n)
	}
	if fresh := shareAll(t, g, d, h, 64); &fresh[0][0] == &first[0][0] {
		t.Fatal("the dropped buffer came back")
	}
}

// A rank's holders hold the buffer apart: an older holder that gives it
// back after a newer one of the same rank took hold (out of turn) gives
// back its own hold only, and the group keeps the buffer for the newer
// one until it gives it back too.
func TestUnshareGivesBackTheHoldersOwnHoldOnly(t *testing.T) {
	const size = 2
	g := NewGroup(size)
	d := make([]Direct, size)
	older, newer := make([]Holder, size), make([]Holder, size)
	for r := range size {
		d[r], _ = DirectOf(g.Comm(r))
		older[r], newer[r] = NewHolder(), NewHolder()
	}
	first := shareAll(t, g, d, older, 64)
	shareAll(t, g, d, newer, 0) // the same buffer: the older holders hold it
	for r := range size {
		if n := d[r].Unshare("s", older[r]); n != 0 {
			t.Fatalf("rank %d's older holder freed %d bytes while the newer ones hold the buffer", r, n)
		}
	}
	if again := shareAll(t, g, d, newer, 0); &again[0][0] != &first[0][0] || &again[1][0] != &first[0][0] {
		t.Fatal("the group's buffer changed while the newer holders held it")
	}
	if n := d[0].Unshare("s", newer[0]) + d[1].Unshare("s", newer[1]); n != 64 {
		t.Fatalf("the newer holders freed %d bytes, want 64", n)
	}
}

// shareAll has every rank r of g share site "s" of size bytes for h[r] and
// checks that the group's buffer grew by want bytes.
func shareAll(t *testing.T, g *Group, d []Direct, h []Holder, want int) [][]byte {
	t.Helper()
	bufs := make([][]byte, len(d))
	grew := make([]int, len(d))
	err := runGroup(g, func(c Communicator) error {
		var err error
		bufs[c.Rank()], grew[c.Rank()], err = d[c.Rank()].Share("s", h[c.Rank()], 64)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range grew {
		total += n
	}
	if total != want {
		t.Fatalf("the group's buffer grew by %d bytes in all, want %d", total, want)
	}
	return bufs
}
