package comm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// killedRankEnv tells a child test binary to play rank 2 of
// TestKilledPeerIsNamed: "rendezvous link".
const killedRankEnv = "GRAFT_COMM_TEST_KILLED_RANK"

// A rank whose process is killed (SIGKILL: its goroutines, its writes to
// shared memory and its connections all stop at once) is named by every
// survivor within the deadline, over every link: what one survivor
// reports to the other names the same rank.
func TestKilledPeerIsNamed(t *testing.T) {
	forLinks(t, func(t *testing.T, link string) {
		if strings.HasPrefix(link, linkShm) && hostIdentity() == "" {
			t.Skip("no shared memory on this system")
		}
		for range 3 {
			testKilledPeer(t, link)
		}
	})
}

func testKilledPeer(t *testing.T, link string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledPeerRank$")
	cmd.Env = append(os.Environ(), killedRankEnv+"="+ln.Addr().String()+" "+link)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill() // no-op once killed below
	comms, errs := connectOn(t, ln, 3, func(rank int, o *Options) {
		linkOptions(link, o)
		if rank == 2 {
			o.Rank = -1 // the child
		}
	})
	for r := range 2 {
		if errs[r] != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("rank %d: %v (rank 2: %s)", r, errs[r], stderr.String())
		}
		if want := map[bool]string{true: linkShm, false: TransportTCP}[link != TransportTCP]; comms[r].Transport(2) != want {
			t.Fatalf("rank %d reaches rank 2 over %q, want %q", r, comms[r].Transport(2), want)
		}
	}
	errs = make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r], _ = loopUntilError(comms[r]) }()
	}
	ready := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if lines.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			wg.Wait()
			t.Fatalf("rank 2 ended before it was killed: %s", stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		wg.Wait()
		t.Fatalf("rank 2 not ready after 10 s: %s", stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	wg.Wait()
	noticed := time.Since(killedAt)
	for r, err := range errs {
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 2 {
			t.Errorf("rank %d: %v; want a PeerError naming rank 2", r, err)
		}
	}
	if noticed > 2*time.Second {
		t.Errorf("the survivors noticed after %v", noticed)
	}
}

// TestKilledPeerRank is rank 2 of TestKilledPeerIsNamed, in a process of
// its own: it takes part in a few all-reduces, says "ready" and waits to
// be killed.
func TestKilledPeerRank(t *testing.T) {
	env := os.Getenv(killedRankEnv)
	if env == "" {
		t.Skip("runs as rank 2 of TestKilledPeerIsNamed")
	}
	addr, link, _ := strings.Cut(env, " ")
	o := quick(t)
	o.Rank, o.Size, o.Rendezvous = 2, 3, addr
	o.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	linkOptions(link, &o)
	c, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, 1000)
	for range 5 {
		if err := c.AllReduce("g", data); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	t.Fatal("not killed within a minute")
}
