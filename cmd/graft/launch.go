package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

	"github.com/graft-gnn/graft/launch"
)

func init() {
	commands["launch"] = command{"start N local workers: graft launch --nproc N [--] <command> [flags]", runLaunch}
}

// launcherVars are the variables that place a worker; the launcher sets
// torchrun's and removes the others, so an outer launcher's values cannot
// contradict ours.
var launcherVars = []string{launcherFDVar, "GRAFT_RANK", "GRAFT_WORLD_SIZE", "GRAFT_RENDEZVOUS", "RANK", "WORLD_SIZE",
	"LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GRAFT_TOKEN", launch.GeneratedSecretVar, restartCountVar,
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "JOB_COMPLETION_INDEX"}

// launchOptions is what graft launch was asked to run.
type launchOptions struct {
	nproc       int
	port        int
	grace       time.Duration
	maxRestarts int
	metricsSD   string // Prometheus file_sd file to write; "" for none
	metricsHost string
	command     []string // graft's arguments for every worker
}

func runLaunch(args []string, stdout, stderr io.Writer) error {
	opt, err := parseLaunchFlags(args, stderr)
	if err != nil {
		return err
	}
	plan := planRestarts(opt.command)
	sd, err := newMetricsSD(opt.metricsSD, opt.metricsHost)
	if err != nil {
		return err
	}
	if sd != nil && !plan.train {
		return usageError{errNoTrain}
	}
	if opt.maxRestarts > 0 && plan.train && plan.dir == "" {
		fmt.Fprintln(stderr, "graft launch: the workers keep no checkpoints (no --checkpoint-dir): a restart trains from the start")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	secret, generated, err := launchSecret()
	if err != nil {
		return err
	}
	link, err := newLauncherLink()
	if err != nil {
		return err
	}
	defer link.close()
	env := workerEnv(opt.nproc)
	if generated {
		env = append(env, launch.GeneratedSecretVar+"=1")
	}
	if sd != nil {
		defer sd.write(nil)
	}
	command := opt.command
	for restart := 0; ; restart++ {
		w, err := startAttempt(exe, opt, plan, command, append(env, restartCountVar+"="+strconv.Itoa(restart)), secret, link, sd, stdout, stderr)
		if err != nil {
			return err
		}
		w.wait(opt.grace)
		w.flush()
		if w.first == nil {
			return nil
		}
		first := w.rootCause()
		status := exitStatus(first.err)
		if why := notRestarted(status, w.interrupted); restart < opt.maxRestarts && why == "" {
			var from string
			command, from = plan.restartArgs(opt.command)
			w.endLine()
			fmt.Fprintf(stderr, "graft launch: rank %d failed (%v); restart %d of %d, %s\n", first.rank, first.err, restart+1, opt.maxRestarts, from)
			continue
		} else if opt.maxRestarts > 0 && why != "" {
			fmt.Fprintf(stderr, "graft launch: rank %d failed (%v): not restarted, %s\n", first.rank, first.err, why)
		}
		err = fmt.Errorf("rank %d failed first (%v); stopped the other workers", first.rank, first.err)
		if opt.maxRestarts > 0 && restart == opt.maxRestarts {
			err = fmt.Errorf("%v, after %d restart%s (--max-restarts %d)", err, restart, plural(restart), opt.maxRestarts)
		}
		if status != 1 {
			// main maps errors to status 1; the first failure's status is the
			// more useful one to a batch system.
			fmt.Fprintf(stderr, "graft launch: %v\n", err)
			if sd != nil {
				sd.write(nil) // os.Exit skips the deferred call
			}
			os.Exit(status)
		}
		return err
	}
}

// startAttempt starts one attempt's workers on a fresh rendezvous port
// (unless --port fixed it), each with its own metrics address when the
// job has a service discovery file (which it then writes) or the command
// a fixed metrics port.
func startAttempt(exe string, opt *launchOptions, plan restartPlan, command, env []string, secret []byte, link *launcherLink, sd *metricsSD, stdout, stderr io.Writer) (*localWorkers, error) {
	port := opt.port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	addrs, err := plan.metricsAddrs(sd, opt.nproc)
	if err != nil {
		return nil, err
	}
	w := startLocalWorkers(exe, opt.nproc, port, func(k int) []string { return withMetricsAddr(command, addrs, k) }, env, secret, link, stdout, stderr)
	if sd != nil {
		if err := sd.write(addrs[:w.started]); err != nil {
			w.signal(syscall.SIGTERM)
			w.wait(opt.grace)
			return nil, err
		}
	}
	return w, nil
}

// launchSecret is the workers' job secret: GRAFT_TOKEN's when it is set (so
// that part directories written with it verify), otherwise a fresh one,
// which it reports as generated.
func launchSecret() (secret []byte, generated bool, err error) {
	if secret, err := launch.OptionalSecret("", os.Getenv); secret != nil || err != nil {
		return secret, false, err
	}
	secret = make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, false, err
	}
	return []byte(hex.EncodeToString(secret)), true, nil
}

func parseLaunchFlags(args []string, stderr io.Writer) (*launchOptions, error) {
	fs := newFlagSet("launch")
	opt := &launchOptions{}
	fs.IntVar(&opt.nproc, "nproc", 2, "number of worker processes")
	fs.IntVar(&opt.port, "port", 0, "rendezvous port on 127.0.0.1 (default: a free one)")
	fs.DurationVar(&opt.grace, "grace", 10*time.Second, "after a failure, how long the other workers get to notice and exit by themselves before SIGTERM (and SIGKILL 2 s later)")
	fs.IntVar(&opt.maxRestarts, "max-restarts", 0, "when a worker fails, stop the others and start the group again, up to `K` times; graft train workers resume from the newest checkpoint of their --checkpoint-dir (without one they train from the start)")
	fs.StringVar(&opt.metricsSD, "metrics-sd", "", "give each graft train worker its own --metrics-addr and list them in `FILE`, a Prometheus file_sd target file (labels rank and graft_job), emptied when the job ends")
	fs.StringVar(&opt.metricsHost, "metrics-host", "127.0.0.1", "`HOST` the workers serve --metrics-sd's metrics on (0.0.0.0: every interface, listed by host name)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: graft launch --nproc N [--port P] [--] <command> [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Starts N workers of this graft binary on this machine with RANK, WORLD_SIZE, MASTER_ADDR,")
		fmt.Fprintln(stderr, "MASTER_PORT and GRAFT_TOKEN (yours if set, else a fresh one); passes rank 0's stdout as it is, byte")
		fmt.Fprintln(stderr, "for byte, and prefixes the other lines with [rank k] (a last line without a newline gets one);")
		fmt.Fprintln(stderr, "exits with the first failure's status after stopping the others (or, with --max-restarts,")
		fmt.Fprintln(stderr, "restarts them).")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return nil, err
	}
	opt.command = fs.Args()
	if len(opt.command) == 0 {
		return nil, usageError{errors.New("missing the command to run, e.g. graft launch --nproc 2 -- train")}
	}
	switch {
	case opt.nproc < 1:
		return nil, usageError{fmt.Errorf("--nproc %d: need at least 1", opt.nproc)}
	case opt.port < 0 || opt.port > 65535:
		return nil, usageError{fmt.Errorf("--port %d: want a port from 1 to 65535, or 0 for a free one", opt.port)}
	case opt.grace < 0:
		return nil, usageError{fmt.Errorf("--grace %v: want 0 or more", opt.grace)}
	case opt.maxRestarts < 0:
		return nil, usageError{fmt.Errorf("--max-restarts %d: want 0 or more", opt.maxRestarts)}
	case opt.metricsSD == "" && opt.metricsHost != "127.0.0.1":
		return nil, usageError{errors.New("--metrics-host applies to --metrics-sd's workers: add --metrics-sd FILE")}
	}
	return opt, nil
}

// workerEnv is this process's environment for nproc workers on this
// machine, without the variables that place a worker.
func workerEnv(nproc int) []string {
	env := os.Environ()[:0:0]
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !contains(launcherVars, name) {
			env = append(env, kv)
		}
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		// The workers share this machine's cores; each sized for all of
		// them would oversubscribe it (torchrun sets OMP_NUM_THREADS=1 for
		// the same reason). Results do not depend on it.
		env = append(env, "GOMAXPROCS="+strconv.Itoa(max(1, runtime.NumCPU()/nproc)))
	}
	return env
}

// rankEnv places worker k of nproc, torchrun's way.
func rankEnv(env []string, k, nproc, port int, secret []byte) []string {
	return append(env[:len(env):len(env)],
		"RANK="+strconv.Itoa(k), "WORLD_SIZE="+strconv.Itoa(nproc),
		"LOCAL_RANK="+strconv.Itoa(k), "LOCAL_WORLD_SIZE="+strconv.Itoa(nproc),
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
		"GRAFT_TOKEN="+string(secret))
}

// workerExit is how one worker ended.
type workerExit struct {
	rank int
	err  error
}

// localWorkers are the processes of one launch and how they have ended.
type localWorkers struct {
	procs       []*exec.Cmd
	started     int
	exits       chan workerExit
	exited      []bool
	failures    []*workerExit // by rank
	first       *workerExit   // the first failure seen
	interrupted bool          // the launcher passed on SIGINT or SIGTERM
	outs, errs  []*lineWriter // by rank; nil for workers never started
}

// startLocalWorkers starts n workers, worker k running command(k),
// stopping at the first that cannot be started (it is then the first
// failure).
func startLocalWorkers(exe string, n, port int, command func(k int) []string, env []string, secret []byte, link *launcherLink, stdout, stderr io.Writer) *localWorkers {
	w := &localWorkers{procs: make([]*exec.Cmd, n), exits: make(chan workerExit, n), exited: make([]bool, n),
		failures: make([]*workerExit, n), outs: make([]*lineWriter, n), errs: make([]*lineWriter, n)}
	var out sync.Mutex // one line at a time from any worker
	for k := range w.procs {
		cmd := exec.Command(exe, command(k)...)
		cmd.Env = rankEnv(env, k, n, port, secret)
		prefix := fmt.Sprintf("[rank %d] ", k)
		// exec copies into these writers and Wait waits for the copying.
		// Rank 0's standard output is the job's result (a summary, --json's
		// JSON) and passes as it is; the other ranks' lines, and every
		// rank's standard error, carry their rank.
		outPrefix := prefix
		if k == 0 {
			outPrefix = ""
		}
		w.outs[k] = &lineWriter{prefix: outPrefix, w: stdout, mu: &out}
		w.errs[k] = &lineWriter{prefix: prefix, w: stderr, mu: &out}
		cmd.Stdout, cmd.Stderr = w.outs[k], w.errs[k]
		cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes cannot stall us
		cmd.SysProcAttr = workerProcAttr()
		cmd.ExtraFiles = []*os.File{link.r}
		cmd.Env = append(cmd.Env, launcherFDVar+"=3")
		w.procs[k] = cmd
		if err := cmd.Start(); err != nil {
			w.first = &workerExit{k, err}
			break
		}
		w.started++
		go func() { w.exits <- workerExit{k, cmd.Wait()} }()
	}
	return w
}

// wait waits for every started worker to exit, passing on SIGINT and
// SIGTERM. After a failure the others normally stop by themselves, naming
// the lost rank, within the transport's peer timeout; they get grace to do
// so before being terminated.
func (w *localWorkers) wait(grace time.Duration) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	var term, kill <-chan time.Time
	if w.first != nil {
		term = time.After(grace)
	}
	for done := 0; done < w.started; {
		select {
		case e := <-w.exits:
			done++
			w.exited[e.rank] = true
			if e.err != nil {
				w.failures[e.rank] = &e
			}
			if e.err != nil && w.first == nil {
				w.first = &e
				term = time.After(grace)
			}
		case sig := <-signals:
			w.interrupted = true
			w.signal(sig)
			if kill == nil {
				kill = time.After(grace)
			}
		case <-term:
			w.signal(syscall.SIGTERM)
			kill = time.After(2 * time.Second)
		case <-kill:
			w.signal(syscall.SIGKILL)
		}
	}
}

// signal sends sig to every worker still running.
func (w *localWorkers) signal(sig os.Signal) {
	for k, c := range w.procs[:w.started] {
		if !w.exited[k] {
			c.Process.Signal(sig)
		}
	}
}

// flush writes the workers' last partial lines: rank 0's standard output's
// last, so that no other worker's line follows it on the line it leaves
// open, if it ends without a newline.
func (w *localWorkers) flush() {
	for k := range w.outs {
		if w.outs[k] != nil {
			if k > 0 {
				w.outs[k].flush()
			}
			w.errs[k].flush()
		}
	}
	if w.outs[0] != nil {
		w.outs[0].flush()
	}
}

// endLine ends the line rank 0's standard output left open, before another
// attempt's workers write.
func (w *localWorkers) endLine() {
	if l := w.outs[0]; l != nil && l.open {
		l.emit("\n")
	}
}

// rootCause is the failure behind the first one seen. Workers that lost a
// peer fail too, sometimes before the peer's own exit is seen; their
// "comm: rank K:" errors lead to it.
func (w *localWorkers) rootCause() *workerExit {
	first := w.first
	for hops := 0; hops < len(w.procs); hops++ {
		m := blamed.FindStringSubmatch(w.errs[first.rank].lastLine())
		if m == nil {
			break
		}
		k, _ := strconv.Atoi(m[1])
		if k == first.rank || k >= len(w.procs) || w.failures[k] == nil {
			break
		}
		first = w.failures[k]
	}
	return first
}

// exitStatus is the status a shell would report for a worker that ended
// with err: 128 plus the signal that killed it, its exit code, or 1.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		} else if ee.ExitCode() > 0 {
			return ee.ExitCode()
		}
	}
	return 1
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
	open    bool // the last line written lacks its newline
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
	l.open = !strings.HasSuffix(line, "\n")
	l.mu.Unlock()
}

// flush writes the partial line the worker's output ended with: as it is
// where lines pass unprefixed (rank 0's standard output, the job's result,
// byte for byte), ended with a newline where they carry a prefix, so that
// the next prefixed line starts a line of its own.
func (l *lineWriter) flush() {
	if len(l.partial) > 0 {
		line := string(l.partial)
		if l.prefix != "" {
			line += "\n"
		}
		l.emit(line)
		l.partial = nil
	}
}

func (l *lineWriter) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
