package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/graft-gnn/graft/train"
)

// secondSignalAfter is how long after the first signal a second one
// stops the process at once (signals that arrive together are one).
const secondSignalAfter = time.Second

// exitCleanupLimit bounds beforeExit, so that a signal ends the process
// promptly whatever it waits for.
const exitCleanupLimit = 2 * time.Second

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels: training stops after the epoch under way, which it keeps (and
// checkpoints, with --checkpoint-dir), so that every worker stops after the
// same epoch. An epoch of a large graph can take minutes, so a second
// signal, sent at least secondSignalAfter later, stops the process at once,
// losing that epoch, with the shell's status for the signal (130 for
// SIGINT, 143 for SIGTERM). Signals that arrive together are one request:
// a terminal's Ctrl-C reaches a launched worker from the terminal and from
// graft launch, and a worker whose launcher dies gets the kernel's
// parent-death signal and its own when the launcher's pipe closes. A
// worker of a job (worker set) leaves the escalation to its launcher, which
// sends SIGKILL after its grace period: every signal only stops it after
// the epoch. Before training begins (while the data loads, the graph is
// partitioned or GraphSAINT pre-samples, which can take long) there is no
// epoch to keep, and the first signal stops a process that is not such a
// worker at once. A process stopped at once first runs beforeExit (which
// writes the CPU profile), for at most exitCleanupLimit. began is called
// as training begins (train.WithBegan). The returned function releases
// the signals.
func interruptible(log io.Writer, worker bool, beforeExit func(), began func(epoch int)) (context.Context, func()) {
	if worker {
		return signal.NotifyContext(train.WithBegan(context.Background(), began), os.Interrupt, syscall.SIGTERM)
	}
	var training atomic.Bool
	ctx, cancel := context.WithCancel(train.WithBegan(context.Background(), func(epoch int) { training.Store(true); began(epoch) }))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-sigs:
		case <-done:
			return
		}
		if !training.Load() {
			fmt.Fprintln(log, "graft train: stopped before training began")
			exitAfter(beforeExit, s)
		}
		fmt.Fprintln(log, "graft train: stopping after the epoch under way, which is kept; interrupt again to stop at once, losing it")
		cancel()
		first := time.Now()
		for {
			select {
			case s := <-sigs:
				if time.Since(first) < secondSignalAfter {
					continue
				}
				fmt.Fprintln(log, "graft train: stopped at once; the epoch under way is lost (--resume continues from the last checkpoint, if any)")
				exitAfter(beforeExit, s)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// exitAfter runs beforeExit, waiting for it at most exitCleanupLimit, and
// exits with the shell's status for the signal s.
func exitAfter(beforeExit func(), s os.Signal) {
	done := make(chan struct{})
	go func() {
		beforeExit()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(exitCleanupLimit):
	}
	os.Exit(128 + int(s.(syscall.Signal)))
}
