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
	"syscall"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/launch"
)

func init() {
	commands["worker"] = command{"transport checks for multi-process runs: worker selftest | worker bench", runWorker}
}

func runWorker(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: graft worker selftest|bench [flags]   (run under graft launch, torchrun, srun or mpirun)")
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
	fs.Var(launch.OptionalCount{P: exitRank}, "exit-rank", "for failure tests: this `rank` exits at once after the mesh forms ...")
	exitCode := fs.Int("exit-code", 3, "... with this status, while the others keep calling all-reduce")
	exitSignal := fs.String("exit-signal", "", "... or by sending itself KILL (a crash) or STOP (a hang)")
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
	fmt.Fprintf(stdout, "rank %d of %d: ok (all-reduce of %d values, all-to-all, broadcast, barrier; %d bytes sent)\n", r, size, *n, st.BytesSent)
	return nil
}

// benchResult is one JSON line of graft worker bench.
type benchResult struct {
	Op          string    `json:"op"`
	Ranks       int       `json:"ranks"`
	Bytes       int64     `json:"bytes"` // buffer (all-reduce) or sent per rank (all-to-all)
	Reps        int       `json:"reps"`
	BestGiBs    float64   `json:"best_gib_per_s"`
	MedianGiBs  float64   `json:"median_gib_per_s"`
	SecondsEach []float64 `json:"seconds"`
}

// workerBench times all-reduce and all-to-all; rank 0 prints JSON lines.
func workerBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker bench")
	wf := launch.AddFlags(fs)
	mib := fs.Int("mib", 64, "all-reduce buffer and all-to-all bytes per rank, in MiB")
	reps := fs.Int("reps", 10, "timed repetitions (best and median are reported)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := wantAtLeast(1, intValue{"mib", *mib}, intValue{"reps", *reps}); err != nil {
		return err
	}
	c, err := connectWorker(wf, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	size := c.Size()
	bytesTotal := int64(*mib) << 20
	data := make([]float32, bytesTotal/4)
	send, recv := make([][]byte, size), make([][]byte, size)
	for p := range size {
		if p != c.Rank() {
			send[p] = make([]byte, bytesTotal/int64(max(1, size-1)))
		}
	}
	enc := json.NewEncoder(stdout)
	for _, op := range []string{"allreduce", "alltoall"} {
		times := make([]float64, 0, *reps)
		for rep := -1; rep < *reps; rep++ { // rep -1 warms up
			if err := c.Barrier("bench.sync"); err != nil {
				return err
			}
			start := time.Now()
			if op == "allreduce" {
				err = c.AllReduce("bench.allreduce", data)
			} else {
				err = c.AllToAll("bench.alltoall", send, recv)
			}
			if err != nil {
				return err
			}
			if rep >= 0 {
				times = append(times, time.Since(start).Seconds())
			}
		}
		if c.Rank() != 0 {
			continue
		}
		gib := float64(bytesTotal) / (1 << 30)
		res := benchResult{Op: op, Ranks: size, Bytes: bytesTotal, Reps: *reps, SecondsEach: times,
			BestGiBs: gib / slices.Min(times), MedianGiBs: gib / stats.Median(times)}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return c.Barrier("bench.end")
}
