package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func init() {
	commands["launch"] = command{"start N local workers: graft launch --nproc N [--] <command> [flags]", runLaunch}
}

// launcherVars are the variables that place a worker; the launcher sets
// torchrun's and removes the others, so an outer launcher's values cannot
// contradict ours.
var launcherVars = []string{"GRAFT_RANK", "GRAFT_WORLD_SIZE", "GRAFT_RENDEZVOUS", "RANK", "WORLD_SIZE",
	"LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GRAFT_TOKEN",
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "JOB_COMPLETION_INDEX"}

func runLaunch(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	nproc := fs.Int("nproc", 2, "number of worker processes")
	port := fs.Int("port", 0, "rendezvous port on 127.0.0.1 (default: a free one)")
	grace := fs.Duration("grace", 10*time.Second, "after a failure, how long the other workers get to notice and exit by themselves before SIGTERM (and SIGKILL 2 s later)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: graft launch --nproc N [--port P] [--] <command> [flags]")
		fmt.Fprintln(stderr, "Starts N workers of this graft binary on this machine with RANK, WORLD_SIZE, MASTER_ADDR,")
		fmt.Fprintln(stderr, "MASTER_PORT and a fresh GRAFT_TOKEN set; prefixes their output with [rank k]; exits with")
		fmt.Fprintln(stderr, "the first failure's status after stopping the others.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError{errors.New("missing the command to run, e.g. graft launch --nproc 2 -- train")}
	}
	if *nproc < 1 {
		return usageError{fmt.Errorf("--nproc %d: need at least 1", *nproc)}
	}
	if *port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		*port = p
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	base := os.Environ()[:0:0]
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !contains(launcherVars, name) {
			base = append(base, kv)
		}
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		// The workers share this machine's cores; each sized for all of
		// them would oversubscribe it (torchrun sets OMP_NUM_THREADS=1 for
		// the same reason). Results do not depend on it.
		base = append(base, "GOMAXPROCS="+strconv.Itoa(max(1, runtime.NumCPU() / *nproc)))
	}
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, *nproc)
	var first *exit
	started := 0
	var out sync.Mutex // one line at a time from any worker
	outs, errs := make([]*lineWriter, *nproc), make([]*lineWriter, *nproc)
	procs := make([]*exec.Cmd, *nproc)
	for k := range procs {
		cmd := exec.Command(exe, rest...)
		cmd.Env = append(base[:len(base):len(base)],
			"RANK="+strconv.Itoa(k), "WORLD_SIZE="+strconv.Itoa(*nproc),
			"LOCAL_RANK="+strconv.Itoa(k), "LOCAL_WORLD_SIZE="+strconv.Itoa(*nproc),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(*port),
			"GRAFT_TOKEN="+hex.EncodeToString(secret))
		prefix := fmt.Sprintf("[rank %d] ", k)
		// exec copies into these writers and Wait waits for the copying.
		outs[k] = &lineWriter{prefix: prefix, w: stdout, mu: &out}
		errs[k] = &lineWriter{prefix: prefix, w: stderr, mu: &out}
		cmd.Stdout, cmd.Stderr = outs[k], errs[k]
		cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes cannot stall us
		procs[k] = cmd
		if err := cmd.Start(); err != nil {
			first = &exit{k, err}
			break
		}
		started++
		go func() { exits <- exit{k, cmd.Wait()} }()
	}
	exited := make([]bool, len(procs))
	failures := make([]*exit, len(procs))
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	stopAll := func(sig os.Signal) {
		for k, c := range procs[:started] {
			if !exited[k] {
				c.Process.Signal(sig)
			}
		}
	}
	// After a failure the others normally stop by themselves, naming the
	// lost rank, within the transport's peer timeout; they get --grace to
	// do so before being terminated.
	var term, kill <-chan time.Time
	if first != nil {
		term = time.After(*grace)
	}
	for done := 0; done < started; {
		select {
		case e := <-exits:
			done++
			exited[e.rank] = true
			if e.err != nil {
				failures[e.rank] = &e
			}
			if e.err != nil && first == nil {
				first = &e
				term = time.After(*grace)
			}
		case sig := <-signals:
			stopAll(sig)
			if kill == nil {
				kill = time.After(*grace)
			}
		case <-term:
			stopAll(syscall.SIGTERM)
			kill = time.After(2 * time.Second)
		case <-kill:
			stopAll(syscall.SIGKILL)
		}
	}
	for k := range outs {
		if outs[k] != nil {
			outs[k].flush()
			errs[k].flush()
		}
	}
	if first == nil {
		return nil
	}
	// Workers that lost a peer fail too, sometimes before the peer's own
	// exit is seen; follow their "comm: rank K:" errors to the root cause.
	for hops := 0; hops < *nproc; hops++ {
		m := blamed.FindStringSubmatch(errs[first.rank].lastLine())
		if m == nil {
			break
		}
		k, _ := strconv.Atoi(m[1])
		if k == first.rank || k >= *nproc || failures[k] == nil {
			break
		}
		first = failures[k]
	}
	code := 1
	var ee *exec.ExitError
	if errors.As(first.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else if ee.ExitCode() > 0 {
			code = ee.ExitCode()
		}
	}
	err = fmt.Errorf("rank %d failed first (%v); stopped the other workers", first.rank, first.err)
	if code != 1 {
		// main maps errors to status 1; the first failure's status is the
		// more useful one to a batch system.
		fmt.Fprintf(stderr, "graft launch: %v\n", err)
		os.Exit(code)
	}
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// blamed finds the rank a worker's error says was lost.
var blamed = regexp.MustCompile(`comm: rank (\d+): `)

// lineWriter writes complete lines to w, each with a prefix, holding a
// partial line until it is complete or flushed; it remembers the last line.
type lineWriter struct {
	prefix  string
	w       io.Writer
	mu      *sync.Mutex
	partial []byte
	last    string
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.emit(string(l.partial[:i+1]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *lineWriter) emit(line string) {
	l.mu.Lock()
	io.WriteString(l.w, l.prefix+line)
	l.last = line
	l.mu.Unlock()
}

func (l *lineWriter) flush() {
	if len(l.partial) > 0 {
		l.emit(string(l.partial) + "\n")
		l.partial = nil
	}
}

func (l *lineWriter) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
