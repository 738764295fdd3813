package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels: training stops after the epoch under way, which it keeps (and
// checkpoints, with --checkpoint-dir), so that every worker stops after the
// same epoch. An epoch of a large graph can take minutes, so a second
// signal stops the process at once, losing that epoch, with the shell's
// status for the signal (130 for SIGINT, 143 for SIGTERM). The returned
// function releases the signals.
func interruptible(log io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(log, "graft train: stopping after the epoch under way, which is kept; interrupt again to stop at once, losing it")
		cancel()
		select {
		case s := <-sigs:
			fmt.Fprintln(log, "graft train: stopped at once; the epoch under way is lost (--resume continues from the last checkpoint, if any)")
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
