package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/launch"
)

func init() {
	commands["worker"] = command{"transport checks for multi-process runs: worker selftest | worker bench", runWorker}
}

func runWorker(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprintln(stderr, "usage: graft worker selftest|bench [flags]   (run under graft launch, torchrun, srun or mpirun)")
		fmt.Fprintln(stderr, "\nChecks the transport of a multi-process job: selftest forms the workers' mesh and checks every")
		fmt.Fprintln(stderr, "collective's result; bench times all-reduce and all-to-all.\n\nRun 'graft worker <selftest|bench> -h' for one's flags.")
		if len(args) == 0 {
			return usageError{errors.New("missing selftest or bench")}
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "selftest":
		return workerSelftest(args[1:], stdout, stderr)
	case "bench":
		return workerBench(args[1:], stdout, stderr)
	}
	return unknownName("worker command", args[0], []string{"selftest", "bench"})
}

func connectWorker(f *launch.Flags, stderr io.Writer) (*comm.TCP, error) {
	logger := log.New(stderr, "", log.LstdFlags)
	return f.Connect(context.Background(), os.Getenv, logger.Printf)
}

// workerSelftest forms the mesh and checks every collective's result, so
// that a passing run proves the processes really exchanged data.
func workerSelftest(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker selftest")
	wf := launch.AddFlags(fs)
	n := fs.Int("n", 3<<20, "values in the all-reduce (more than one ring round at 2 workers)")
	exitRank := new(int)
	*exitRank = -1
	fs.Var(launch.OptionalCount{P: exitRank}, "exit-rank", "for failure tests: this `rank` exits at once after the mesh forms (with --exit-code, or by --exit-signal), while the others keep calling all-reduce")
	exitCode := fs.Int("exit-code", 3, "the exit status of --exit-rank")
	exitSignal := fs.String("exit-signal", "", "make --exit-rank end by sending itself `SIGNAL`, KILL (a crash) or STOP (a hang), instead of exiting")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := wantAtLeast(1, intValue{"n", *n}); err != nil {
		return err
	}
	c, err := connectWorker(wf, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	r, size := c.Rank(), c.Size()
	if r == *exitRank {
		switch *exitSignal {
		case "KILL", "STOP":
			fmt.Fprintf(stdout, "rank %d of %d: sending myself SIG%s as asked\n", r, size, *exitSignal)
			sig := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "STOP": syscall.SIGSTOP}[*exitSignal]
			syscall.Kill(os.Getpid(), sig)
			select {} // stopped or dead
		case "":
		default:
			return usageError{fmt.Errorf("--exit-signal %q: want KILL or STOP", *exitSignal)}
		}
		fmt.Fprintf(stdout, "rank %d of %d: exiting with status %d as asked\n", r, size, *exitCode)
		os.Exit(*exitCode)
	}
	if *exitRank >= 0 {
		start := time.Now()
		data := make([]float32, 1<<16)
		for {
			if err := c.AllReduce("loop", data); err != nil {
				return fmt.Errorf("after %.1fs: %w", time.Since(start).Seconds(), err)
			}
		}
	}
	// Small integers are exact in float32, so the sum is known exactly.
	data := make([]float32, *n)
	for i := range data {
		data[i] = float32((r + 1) * (i%7 + 1))
	}
	if err := c.AllReduce("selftest.allreduce", data); err != nil {
		return err
	}
	tri := size * (size + 1) / 2
	for i, v := range data {
		if want := float32(tri * (i%7 + 1)); v != want {
			return fmt.Errorf("all-reduce: [%d] = %v, want %v", i, v, want)
		}
	}
	send, recv := make([][]byte, size), make([][]byte, size)
	for p := range size {
		send[p] = fmt.Appendf(nil, "%d->%d", r, p)
	}
	if err := c.AllToAll("selftest.alltoall", send, recv); err != nil {
		return err
	}
	for p := range size {
		if want := fmt.Sprintf("%d->%d", p, r); string(recv[p]) != want {
			return fmt.Errorf("all-to-all: from rank %d got %q, want %q", p, recv[p], want)
		}
	}
	msg := make([]byte, 16)
	if r == size-1 {
		copy(msg, "from the last")
	}
	if err := c.Broadcast("selftest.broadcast", size-1, msg); err != nil {
		return err
	}
	if !bytes.HasPrefix(msg, []byte("from the last")) {
		return fmt.Errorf("broadcast: got %q", msg)
	}
	if err := c.Barrier("selftest.barrier"); err != nil {
		return err
	}
	st := c.Stats().Total("")
	over := ""
	if size > 1 {
		over = " over " + transports(c)
	}
	fmt.Fprintf(stdout, "rank %d of %d: ok%s (all-reduce of %d values, all-to-all, broadcast, barrier; %d bytes sent)\n", r, size, over, *n, st.BytesSent)
	return nil
}

// benchResult is one JSON line of graft worker bench.
type benchResult struct {
	Op          string    `json:"op"`
	Ranks       int       `json:"ranks"`
	Transport   string    `json:"transport,omitempty"` // to the peers: shm, tcp or both
	Bytes       int64     `json:"bytes"`               // buffer (all-reduce, memcpy) or sent per rank (all-to-all)
	Reps        int       `json:"reps"`
	BestGiBs    float64   `json:"best_gib_per_s"`
	MedianGiBs  float64   `json:"median_gib_per_s"`
	VsMemcpy    float64   `json:"median_vs_memcpy,omitempty"` // median over memcpy's median
	CPUSeconds  float64   `json:"cpu_seconds"`                // rank 0's process CPU time, median of the repetitions
	SecondsEach []float64 `json:"seconds"`
}

// workerBench times a plain copy of the bytes in each process (memcpy),
// all-reduce and all-to-all, each repetition started together on every
// rank; rank 0 prints JSON lines.
func workerBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker bench")
	wf := launch.AddFlags(fs)
	mib := fs.Int("mib", 64, "all-reduce buffer and all-to-all bytes per rank, in MiB")
	reps := fs.Int("reps", 10, "timed repetitions (best and median are reported)")
	only := fs.String("op", "", "time only this `collective`, allreduce or alltoall (memcpy always runs, for scale)")
	profile := fs.String("cpuprofile", "", "each rank writes a CPU profile of the collectives from the first one's timed repetitions on (not memcpy or the first warm-up; with both, the second's warm-up too: --op picks one) to `FILE`.RANK (go tool pprof)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := wantAtLeast(1, intValue{"mib", *mib}, intValue{"reps", *reps}); err != nil {
		return err
	}
	benchOps := []string{"memcpy", "allreduce", "alltoall"}
	switch *only {
	case "":
	case "allreduce", "alltoall":
		benchOps = []string{"memcpy", *only}
	default:
		return usageError{fmt.Errorf("--op %q: want allreduce or alltoall", *only)}
	}
	c, err := connectWorker(wf, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	size := c.Size()
	bytesTotal := int64(*mib) << 20
	// The buffers come from the allocator training's large buffers use.
	data := hugepage.Float32s(int(bytesTotal / 4))
	src, dst := filled(int(bytesTotal)), hugepage.Bytes(int(bytesTotal))
	send, recv := make([][]byte, size), make([][]byte, size)
	for p := range size {
		if p != c.Rank() {
			send[p] = filled(int(bytesTotal / int64(max(1, size-1))))
		}
	}
	ops := map[string]func() error{
		"memcpy":    func() error { copy(dst, src); return nil },
		"allreduce": func() error { return c.AllReduce("bench.allreduce", data) },
		"alltoall":  func() error { return c.AllToAll("bench.alltoall", send, recv) },
	}
	enc := json.NewEncoder(stdout)
	var memcpy float64
	stopProfile := func() {}
	defer func() { stopProfile() }()
	for _, op := range benchOps {
		times := make([]float64, 0, *reps)
		cpus := make([]float64, 0, *reps)
		for rep := -1; rep < *reps; rep++ { // rep -1 warms up
			if rep == 0 && op != "memcpy" && *profile != "" {
				stop, err := startCPUProfile(fmt.Sprintf("%s.%d", *profile, c.Rank()))
				if err != nil {
					return err
				}
				stopProfile = stop
				*profile = ""
			}
			if err := c.Barrier("bench.sync"); err != nil {
				return err
			}
			cpu0 := cpuSeconds()
			start := time.Now()
			if err := ops[op](); err != nil {
				return err
			}
			if rep >= 0 {
				times = append(times, time.Since(start).Seconds())
				cpus = append(cpus, cpuSeconds()-cpu0)
			}
		}
		if c.Rank() != 0 {
			continue
		}
		gib := float64(bytesTotal) / (1 << 30)
		res := benchResult{Op: op, Ranks: size, Bytes: bytesTotal, Reps: *reps, SecondsEach: times,
			BestGiBs: gib / slices.Min(times), MedianGiBs: gib / stats.Median(times), CPUSeconds: stats.Median(cpus)}
		if op == "memcpy" {
			memcpy = res.MedianGiBs
		} else {
			res.Transport, res.VsMemcpy = transports(c), res.MedianGiBs/memcpy
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return c.Barrier("bench.end")
}

// cpuSeconds is the CPU time this process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// filled returns n bytes that are not all zero, so that reading them
// touches real memory rather than the kernel's shared zero page.
func filled(n int) []byte {
	b := hugepage.Bytes(n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

// transports names the links from this rank to its peers: "shm", "tcp",
// or "shm+tcp" when some peers are on this host and some are not.
func transports(c *comm.TCP) string {
	var kinds []string
	for p := range c.Size() {
		if k := c.Transport(p); k != "" && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, "+")
}
