package main

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/internal/atomicfile"
	"github.com/graft-gnn/graft/metrics"
)

// restartCountVar tells a worker how many times graft launch has restarted
// its group (0 on the first start), as torchrun's TORCHELASTIC_RESTART_COUNT.
const restartCountVar = "GRAFT_RESTART_COUNT"

// restartPlan is what a restart of the workers' command resumes from.
type restartPlan struct {
	train       bool   // the command is graft train
	dir         string // where its checkpoints go: --checkpoint-dir, else --resume's; "" for none
	metricsAddr string // its --metrics-addr
}

// planRestarts reads the workers' command for where a restart can resume
// from. A command that does not parse is left to fail in the workers.
func planRestarts(command []string) restartPlan {
	if len(command) == 0 || command[0] != "train" {
		return restartPlan{}
	}
	var o trainOptions
	fs := newTrainFlags(&o)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if fs.Parse(command[1:]) != nil {
		return restartPlan{train: true}
	}
	dir := o.dist.checkpointDir
	if dir == "" {
		dir = o.dist.resume // a resumed run keeps checkpointing there
	}
	return restartPlan{train: true, dir: dir, metricsAddr: o.metricsAddr}
}

// restartArgs is the command for a restart: the original one, resuming
// from the newest checkpoint in the plan's directory when there is one
// (the flag given last wins); from says what it resumes from.
func (p restartPlan) restartArgs(command []string) (args []string, from string) {
	if p.dir == "" {
		if p.train {
			return command, "starting over (no --checkpoint-dir)"
		}
		return command, "starting over"
	}
	st, path, err := checkpoint.LoadLatest(p.dir, nil)
	if err != nil {
		return command, fmt.Sprintf("starting over (no checkpoint in %s yet)", p.dir)
	}
	args = append(command[:len(command):len(command)], "--resume", p.dir)
	return args, fmt.Sprintf("resuming from %s (after epoch %d)", path, st.Step)
}

// notRestarted says why a failure is not worth a restart, or "".
func notRestarted(status int, interrupted bool) string {
	switch {
	case interrupted:
		return "interrupted"
	case status == 2:
		// graft's status for a usage or settings error: the same command
		// fails the same way every time.
		return "a usage error, which a restart repeats"
	}
	return ""
}

// metricsSD writes the Prometheus file-based service discovery file of a
// job's workers: one target per worker, labelled with its rank and the
// job's identity.
type metricsSD struct {
	path, host, job string
}

func newMetricsSD(path, host string) (*metricsSD, error) {
	if path == "" {
		return nil, nil
	}
	if err := atomicfile.CheckWritable(path); err != nil {
		return nil, usageError{fmt.Errorf("--metrics-sd: %v", err)}
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &metricsSD{path: path, host: host, job: hex.EncodeToString(b[:])}, nil
}

// addrs picks a free port on the metrics host for each of n workers.
func (m *metricsSD) addrs(n int) ([]string, error) {
	out := make([]string, n)
	lns := make([]net.Listener, n) // held until all are picked, so none repeats
	defer func() {
		for _, ln := range lns {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	for k := range out {
		ln, err := net.Listen("tcp", net.JoinHostPort(m.host, "0"))
		if err != nil {
			return nil, fmt.Errorf("--metrics-host %s: %v", m.host, err)
		}
		lns[k] = ln
		out[k] = net.JoinHostPort(m.host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	return out, nil
}

// sdGroup is one entry of a file_sd file.
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// write replaces the file with addrs' targets (none: an empty list, so
// Prometheus drops the job's targets).
func (m *metricsSD) write(addrs []string) error {
	groups := []sdGroup{}
	for k, a := range addrs {
		target := a
		if host, port, err := net.SplitHostPort(a); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				// Served on every interface: Prometheus reaches it by name.
				if name, err := os.Hostname(); err == nil {
					target = net.JoinHostPort(name, port)
				}
			}
		}
		// "job" is Prometheus's own label (the scrape configuration's
		// name), so the job's identity goes in graft_job.
		groups = append(groups, sdGroup{Targets: []string{target}, Labels: map[string]string{"rank": strconv.Itoa(k), "graft_job": m.job}})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(m.path, append(b, '\n')); err != nil {
		return fmt.Errorf("--metrics-sd: %v", err)
	}
	return nil
}

// metricsAddrs are the workers' metrics addresses: --metrics-sd's, else,
// when the command serves metrics on a fixed port P, P+k for worker k (on
// one machine they cannot share it); nil leaves the command's.
func (p restartPlan) metricsAddrs(sd *metricsSD, n int) ([]string, error) {
	if sd != nil {
		return sd.addrs(n)
	}
	host, port, err := net.SplitHostPort(p.metricsAddr)
	if err != nil || n == 1 {
		return nil, nil
	}
	first, err := strconv.Atoi(port)
	if err != nil || first <= 0 || first+n-1 > 65535 {
		return nil, nil // port 0: each picks its own; a bad one is the worker's to refuse
	}
	addrs := make([]string, n)
	for k := range addrs {
		addrs[k] = net.JoinHostPort(host, strconv.Itoa(first+k))
	}
	return addrs, nil
}

// withMetricsAddr gives worker k its own --metrics-addr (the flag given
// last wins over one in the command).
func withMetricsAddr(command []string, addrs []string, k int) []string {
	if addrs == nil {
		return command
	}
	return append(command[:len(command):len(command)], "--metrics-addr", addrs[k])
}

var errNoTrain = errors.New("--metrics-sd serves the metrics of graft train workers: the command must be train")

// failAtVar is a hook for tests of restarts, not a setting: "RANK:EPOCH"
// makes that rank of a graft train job kill itself with SIGKILL as soon as
// it has recorded EPOCH, as a worker that crashes mid-run, on the first
// start of its group only (GRAFT_RESTART_COUNT unset or 0).
const failAtVar = "GRAFT_TEST_FAIL_AT"

// failAt wraps a worker's per-epoch callback with failAtVar's hook.
func failAt(rank int, progress func(metrics.Epoch)) func(metrics.Epoch) {
	r, e, ok := strings.Cut(os.Getenv(failAtVar), ":")
	if !ok || r != strconv.Itoa(rank) || cmp.Or(os.Getenv(restartCountVar), "0") != "0" {
		return progress
	}
	epoch, err := strconv.Atoi(e)
	if err != nil {
		return progress
	}
	return func(m metrics.Epoch) {
		progress(m)
		if m.Epoch >= epoch {
			fmt.Fprintf(os.Stderr, "graft train: %s=%s: killing this worker after epoch %d\n", failAtVar, os.Getenv(failAtVar), m.Epoch)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // dead
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
