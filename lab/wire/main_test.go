//go:build linux

package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func testSwitch(loss float64) *switcher {
	return newSwitch(3, netip.MustParseAddr("10.232.0.10"), 8e6, time.Millisecond, 20*time.Millisecond, loss, 1)
}

// ipv4 is a minimal IPv4 header from 10.232.0.(10+src) to 10.232.0.(10+dst).
func ipv4(n, src, dst int) []byte {
	p := make([]byte, n)
	p[0] = 0x45
	copy(p[12:], []byte{10, 232, 0, byte(10 + src)})
	copy(p[16:], []byte{10, 232, 0, byte(10 + dst)})
	return p
}

func TestScheduleSerialisesAndDelays(t *testing.T) {
	s := testSwitch(0)
	now := time.Unix(1000, 0)
	// 1000 bytes at 1 MB/s take 1 ms on each link; the wire adds 1 ms.
	at, ok := s.schedule(0, 1, 1000, now)
	if !ok || at.Sub(now) != 3*time.Millisecond {
		t.Fatalf("first packet leaves after %v (ok %v), want 3ms: uplink, delay, downlink", at.Sub(now), ok)
	}
	at2, _ := s.schedule(0, 1, 1000, now)
	if at2.Sub(at) != time.Millisecond {
		t.Errorf("a second packet sent at once follows %v later, want one serialisation (1ms)", at2.Sub(at))
	}
	// Another sender shares host 1's downlink: it waits for it.
	at3, _ := s.schedule(2, 1, 1000, now)
	if at3.Sub(at2) != time.Millisecond {
		t.Errorf("a packet from host 2 to the busy host 1 leaves %v after the last, want 1ms", at3.Sub(at2))
	}
	// Host 2's packet to host 0 does not wait for host 1's downlink.
	at4, _ := s.schedule(1, 0, 1000, now)
	if at4.Sub(now) != 3*time.Millisecond {
		t.Errorf("an idle path took %v, want 3ms", at4.Sub(now))
	}
}

func TestScheduleDropsBeyondTheQueue(t *testing.T) {
	s := testSwitch(0)
	now := time.Unix(1000, 0)
	sent := 0
	for range 100 { // 100 ms of traffic at once: the 20 ms queue overflows
		if _, ok := s.schedule(0, 1, 1000, now); ok {
			sent++
		}
	}
	if sent < 20 || sent > 22 {
		t.Errorf("%d of 100 back-to-back 1 ms packets queued, want about 21 (20 ms of queue)", sent)
	}
}

func TestForwardRoutesAndLoses(t *testing.T) {
	s := testSwitch(0.25)
	for g := range s.out {
		s.out[g] = make(chan packet, 10000)
	}
	now := time.Unix(1000, 0)
	for i := range 4000 {
		// Far apart in time, so no queue fills.
		s.forward(0, packet{data: ipv4(100, 0, 2)}, now.Add(time.Duration(i)*time.Second))
	}
	if got := len(s.out[2]); got < 2800 || got > 3200 {
		t.Errorf("%d of 4000 packets arrived with 25%% loss, want about 3000", got)
	}
	if s.lost+len(s.out[2]) != 4000 {
		t.Errorf("lost %d + delivered %d ≠ 4000 sent", s.lost, len(s.out[2]))
	}
	for _, bad := range [][]byte{
		ipv4(100, 0, 0),                           // to itself
		ipv4(100, 0, 7),                           // to no host
		ipv4(100, 0, 1)[:19],                      // truncated header
		append([]byte{0x60}, make([]byte, 40)...), // IPv6
	} {
		if s.forward(0, packet{data: bad}, now) {
			t.Errorf("forwarded a packet the wire cannot deliver: % x", bad[:min(20, len(bad))])
		}
	}
}

func TestControlChangesTheLossRateAndQueue(t *testing.T) {
	s := testSwitch(0)
	var out, log strings.Builder
	s.control(strings.NewReader("loss 0.01\nloss 2\nbogus\nloss 0\nloss 0.5\nrate 1e8\nrate 0\nqueue 0s\nqueue 200ms\n"), &out, &log)
	want := "ok 1\n" +
		"error 2: want \"loss F\" with F in [0, 1), \"rate R\" with R > 0 or \"queue D\" with D > 0, got \"loss 2\"\n" +
		"error 3: want \"loss F\" with F in [0, 1), \"rate R\" with R > 0 or \"queue D\" with D > 0, got \"bogus\"\n" +
		"ok 4\nok 5\nok 6\n" +
		"error 7: want \"loss F\" with F in [0, 1), \"rate R\" with R > 0 or \"queue D\" with D > 0, got \"rate 0\"\n" +
		"error 8: want \"loss F\" with F in [0, 1), \"rate R\" with R > 0 or \"queue D\" with D > 0, got \"queue 0s\"\n" +
		"ok 9\n"
	if out.String() != want {
		t.Errorf("answers:\n%s\nwant:\n%s", out.String(), want)
	}
	if s.loss != 0.5 {
		t.Errorf("loss %g after the last command, want 0.5", s.loss)
	}
	if s.bytesPerSecond != 1e8/8 {
		t.Errorf("rate %g bytes/s after the last command, want 1.25e7", s.bytesPerSecond)
	}
	if s.queue != 200*time.Millisecond {
		t.Errorf("queue %v after the last command, want 200ms", s.queue)
	}
	if n := strings.Count(log.String(), "\n"); n != 5 {
		t.Errorf("%d log lines for 5 changes:\n%s", n, log.String())
	}
	// At the new rate a 1,250-byte packet takes 100 µs on each link.
	now := time.Now()
	at, ok := s.schedule(0, 1, 1250, now)
	if want := now.Add(100*time.Microsecond + time.Millisecond + 100*time.Microsecond); !ok || !at.Equal(want) {
		t.Errorf("packet leaves after %v (ok %v), want 1.2ms", at.Sub(now), ok)
	}
}

// TestRunRejectsBadArguments checks the arguments a switch cannot work
// with; they fail before any TUN device is opened, so no root is needed.
func TestRunRejectsBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-first", "10.0.0"}, "want an IPv4 address"},
		{[]string{"-first", "fd00::1"}, "want an IPv4 address"},
		{[]string{"-hosts", "1"}, "-hosts ≥ 2"},
		{[]string{"-rate", "0"}, "-rate > 0"},
		{[]string{"-loss", "1"}, "-loss in [0, 1)"},
		{[]string{"-loss", "-0.1"}, "-loss in [0, 1)"},
	} {
		err := run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
