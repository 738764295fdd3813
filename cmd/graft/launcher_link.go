package main

import (
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A worker of graft launch must not outlive the launcher. On Linux the
// kernel sends it SIGTERM when the launcher dies (workerProcAttr, the
// parent-death signal); everywhere, the launcher also holds the write end
// of a pipe whose read end every worker inherits, and writes a heartbeat
// into it: a worker that reads the end of the pipe, or no heartbeat for
// launcherSilence, sends itself SIGTERM. graft train stops on SIGTERM after
// the same epoch on every worker, rank 0 writing its checkpoint.

// launcherFDVar names the worker's file descriptor of the launcher's pipe.
const launcherFDVar = "GRAFT_LAUNCHER_FD"

const (
	launcherHeartbeat = time.Second
	launcherSilence   = 30 * time.Second
)

// launcherLink is the launcher's end of the pipe.
type launcherLink struct {
	w, r *os.File
	stop chan struct{}
	once sync.Once
}

// newLauncherLink makes the pipe and starts the heartbeat; r goes to the
// workers (as ExtraFiles[0], descriptor 3).
func newLauncherLink() (*launcherLink, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	l := &launcherLink{w: w, r: r, stop: make(chan struct{})}
	go func() {
		tick := time.NewTicker(launcherHeartbeat)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				w.Write([]byte{1}) // a worker that has exited leaves it unread; the pipe holds 64 KiB
			}
		}
	}()
	return l, nil
}

// close ends the heartbeat and closes the launcher's ends.
func (l *launcherLink) close() {
	l.once.Do(func() {
		close(l.stop)
		l.w.Close()
		l.r.Close()
	})
}

var watchOnce sync.Once

// watchLauncher, in a worker started by graft launch, sends this process
// SIGTERM once the launcher is gone.
func watchLauncher() {
	s := os.Getenv(launcherFDVar)
	if s == "" {
		return
	}
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return
	}
	watchOnce.Do(func() {
		go func() {
			watchPipe(os.NewFile(uintptr(fd), "launcher"), launcherSilence)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(syscall.SIGTERM)
			}
		}()
	})
}

// watchPipe returns when r reaches its end, fails, or stays silent for
// longer than silence.
func watchPipe(r *os.File, silence time.Duration) {
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		var b [64]byte
		for {
			if _, err := r.Read(b[:]); err != nil {
				return // io.EOF: every write end is closed
			}
			select {
			case beats <- struct{}{}:
			default:
			}
		}
	}()
	timer := time.NewTimer(silence)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-beats:
			if !ok {
				return
			}
			timer.Reset(silence)
		case <-timer.C:
			return
		}
	}
}
