package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/graft-gnn/graft/comm"
)

// DefaultPort is the rendezvous port when an address comes without one
// (torchrun's default).
const DefaultPort = 29500

// minSecretLen is the shortest job secret accepted, in bytes.
const minSecretLen = 16

// Place is where a worker sits in its job.
type Place struct {
	Rank, Size int
	Rendezvous string // rank 0's host:port; empty for a world of one
	Source     string // the convention rank and size came from
}

// Flags holds the worker flags; register them with AddFlags.
type Flags struct {
	Rank, Size   int    // -1 when not given
	Rendezvous   string // rank 0's host:port
	Listen       string // this rank's listen address (default: see comm.Options)
	SecretFile   string
	StartTimeout time.Duration
	PeerTimeout  time.Duration
	TLSCert      string
	TLSKey       string
	TLSCA        string
	Transport    string // "" for GRAFT_TRANSPORT, else auto
}

// AddFlags registers the worker flags on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{Rank: -1, Size: -1}
	fs.Var(OptionalCount{&f.Rank, 0}, "rank", "this worker's `rank` (default: from the environment)")
	fs.Var(OptionalCount{&f.Size, 1}, "world", "`number` of workers (default: from the environment)")
	fs.StringVar(&f.Rendezvous, "rendezvous", "", "rank 0's host:port (default: GRAFT_RENDEZVOUS, MASTER_ADDR:MASTER_PORT or the Slurm step's first node)")
	fs.StringVar(&f.Listen, "listen", "", "host:port this worker accepts peers on (default: the interface that reaches rank 0)")
	fs.StringVar(&f.SecretFile, "secret-file", "", "file holding the job secret (default: GRAFT_TOKEN)")
	fs.DurationVar(&f.StartTimeout, "start-timeout", 60*time.Second, "how long to wait for every worker to arrive")
	fs.DurationVar(&f.PeerTimeout, "peer-timeout", 6*time.Second, "a peer silent for this long is declared lost")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "PEM certificate: encrypt connections with TLS (with --tls-key, --tls-ca)")
	fs.StringVar(&f.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.TLSCA, "tls-ca", "", "PEM CA certificate every worker's certificate is signed by")
	fs.StringVar(&f.Transport, "transport", "", "auto: workers on one host share memory, others use TCP; tcp: TCP between every pair (default: GRAFT_TRANSPORT, else auto)")
	return f
}

// convention is one way launchers announce rank and size.
type convention struct {
	name       string
	rank, size string // variable names; size "" = taken from sizeVars
}

var conventions = []convention{
	{"graft", "GRAFT_RANK", "GRAFT_WORLD_SIZE"},
	{"torchrun", "RANK", "WORLD_SIZE"},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
	{"Kubernetes", "JOB_COMPLETION_INDEX", ""},
}

// Resolve works out the worker's place from flags and the environment
// (getenv is os.Getenv in production).
func Resolve(f *Flags, getenv func(string) string) (Place, error) {
	p := Place{Rank: -1, Size: -1}
	for _, c := range conventions {
		rankText := strings.TrimSpace(getenv(c.rank))
		if rankText == "" {
			continue
		}
		p.Source = c.name
		var err error
		if p.Rank, err = parseCount(c.rank, rankText); err != nil {
			return Place{}, err
		}
		sizeVar := c.size
		if sizeVar == "" { // indexed Jobs say nothing of the size; the manifest does
			sizeVar = "WORLD_SIZE"
			if getenv(sizeVar) == "" {
				sizeVar = "GRAFT_WORLD_SIZE"
			}
		}
		sizeText := strings.TrimSpace(getenv(sizeVar))
		switch {
		case sizeText != "":
			if p.Size, err = parseCount(sizeVar, sizeText); err != nil {
				return Place{}, err
			}
		case f.Size < 0:
			return Place{}, fmt.Errorf("%s sets %s=%s but not %s; set it or --world", c.name, c.rank, rankText, sizeVar)
		}
		break
	}
	if f.Rank >= 0 {
		if p.Rank >= 0 && p.Rank != f.Rank {
			return Place{}, fmt.Errorf("--rank %d contradicts the environment (%s says rank %d)", f.Rank, p.Source, p.Rank)
		}
		p.Rank = f.Rank
	}
	if f.Size >= 0 {
		if p.Size >= 0 && p.Size != f.Size {
			return Place{}, fmt.Errorf("--world %d contradicts the environment (%s says %d workers)", f.Size, p.Source, p.Size)
		}
		p.Size = f.Size
	}
	if p.Source == "" {
		p.Source = "flags"
	}
	switch {
	case p.Rank < 0 && p.Size < 0:
		p.Rank, p.Size, p.Source = 0, 1, "default (one worker)"
	case p.Rank < 0:
		return Place{}, fmt.Errorf("world size %d but no rank: set --rank or a launcher's rank variable", p.Size)
	case p.Size < 0:
		return Place{}, fmt.Errorf("rank %d but no world size: set --world", p.Rank)
	case p.Size < 1:
		return Place{}, fmt.Errorf("world size %d: need at least 1 worker", p.Size)
	case p.Rank >= p.Size:
		return Place{}, fmt.Errorf("rank %d outside a world of %d workers (ranks 0 to %d)", p.Rank, p.Size, p.Size-1)
	}
	if p.Size == 1 {
		return p, nil
	}
	addr, err := rendezvous(f.Rendezvous, getenv)
	if err != nil {
		return Place{}, err
	}
	p.Rendezvous = addr
	return p, nil
}

func parseCount(name, text string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a non-negative integer", name, text)
	}
	return n, nil
}

// rendezvous finds rank 0's address: the flag, GRAFT_RENDEZVOUS,
// MASTER_ADDR[:MASTER_PORT], or the first host of the Slurm step's node
// list (else the job's).
func rendezvous(flagAddr string, getenv func(string) string) (string, error) {
	port := DefaultPort
	if s := getenv("MASTER_PORT"); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil || p <= 0 || p > 65535 {
			return "", fmt.Errorf("MASTER_PORT=%q is not a port number", s)
		}
		port = p
	}
	withPort := func(source, addr string) (string, error) {
		if _, _, err := net.SplitHostPort(addr); err == nil {
			return addr, nil
		}
		if strings.ContainsAny(addr, " /") || addr == "" {
			return "", fmt.Errorf("%s %q is not a host or host:port", source, addr)
		}
		return net.JoinHostPort(strings.Trim(addr, "[]"), strconv.Itoa(port)), nil
	}
	switch {
	case flagAddr != "":
		return withPort("--rendezvous", flagAddr)
	case getenv("GRAFT_RENDEZVOUS") != "":
		return withPort("GRAFT_RENDEZVOUS", getenv("GRAFT_RENDEZVOUS"))
	case getenv("MASTER_ADDR") != "":
		return withPort("MASTER_ADDR", getenv("MASTER_ADDR"))
	}
	// Rank 0 of an srun step runs on the step's first node, which is not
	// the allocation's first node when the step uses only some nodes
	// (srun --relative, --exclude, or several steps side by side).
	for _, v := range []string{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"} {
		if list := getenv(v); list != "" {
			hosts, err := ExpandNodeList(list)
			if err != nil {
				return "", fmt.Errorf("%s: %w", v, err)
			}
			return net.JoinHostPort(hosts[0], strconv.Itoa(port)), nil
		}
	}
	return "", errors.New("no rendezvous address: set --rendezvous, GRAFT_RENDEZVOUS or MASTER_ADDR (and MASTER_PORT)")
}

// Secret reads the job secret from file, or else from GRAFT_TOKEN.
func Secret(file string, getenv func(string) string) ([]byte, error) {
	var s []byte
	source := "GRAFT_TOKEN"
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("job secret: %w", err)
		}
		s, source = []byte(strings.TrimSpace(string(b))), file
	} else {
		s = []byte(strings.TrimSpace(getenv("GRAFT_TOKEN")))
	}
	if len(s) == 0 {
		return nil, errors.New("no job secret: set GRAFT_TOKEN or --secret-file (e.g. openssl rand -hex 32)")
	}
	if len(s) < minSecretLen {
		return nil, fmt.Errorf("job secret from %s has %d bytes; use at least %d (e.g. openssl rand -hex 32)", source, len(s), minSecretLen)
	}
	if bits := secretBits(s); bits < minSecretBits {
		return nil, fmt.Errorf("job secret from %s is weak (about %.0f bits: runs, sequences, keyboard rows, repeats or common words); use at least %d random bits, e.g. openssl rand -hex 32 or head -c 32 /dev/urandom | base64", source, bits, minSecretBits)
	}
	return s, nil
}

// GeneratedSecretVar, set to 1 in a worker's environment, says that its
// GRAFT_TOKEN was made for the job by a launcher rather than given by the
// user: it authenticates the workers to each other but cannot have
// authenticated anything written before the job (UserSecret).
const GeneratedSecretVar = "GRAFT_TOKEN_GENERATED"

// UserSecret reports whether the job secret from file or GRAFT_TOKEN is
// the user's own: it then authenticates stored parts, which must carry its
// MAC.
func UserSecret(file string, getenv func(string) string) bool {
	return file != "" || (strings.TrimSpace(getenv("GRAFT_TOKEN")) != "" && getenv(GeneratedSecretVar) != "1")
}

// OptionalSecret is Secret for a process that may run without a job
// secret: nil when neither file nor GRAFT_TOKEN gives one.
func OptionalSecret(file string, getenv func(string) string) ([]byte, error) {
	if file == "" && strings.TrimSpace(getenv("GRAFT_TOKEN")) == "" {
		return nil, nil
	}
	return Secret(file, getenv)
}

// Options resolves the flags and environment into comm options (logf
// receives refused connections and lost peers).
func (f *Flags) Options(getenv func(string) string, logf func(string, ...any)) (comm.Options, error) {
	p, err := Resolve(f, getenv)
	if err != nil {
		return comm.Options{}, err
	}
	o := comm.Options{Rank: p.Rank, Size: p.Size, Rendezvous: p.Rendezvous, Listen: f.Listen,
		StartTimeout: f.StartTimeout, PeerTimeout: f.PeerTimeout, Logf: logf,
		Transport: f.Transport}
	if o.Transport == "" {
		o.Transport = strings.TrimSpace(getenv(comm.TransportEnv))
		if err := comm.CheckTransport(o.Transport); err != nil {
			return comm.Options{}, fmt.Errorf("%s: %w", comm.TransportEnv, err)
		}
	} else if err := comm.CheckTransport(o.Transport); err != nil {
		return comm.Options{}, fmt.Errorf("--transport: %w", err)
	}
	if p.Size == 1 {
		return o, nil
	}
	if o.Secret, err = Secret(f.SecretFile, getenv); err != nil {
		return comm.Options{}, err
	}
	if f.TLSCert != "" || f.TLSKey != "" || f.TLSCA != "" {
		if f.TLSCert == "" || f.TLSKey == "" || f.TLSCA == "" {
			return comm.Options{}, errors.New("TLS needs all of --tls-cert, --tls-key and --tls-ca")
		}
		if o.TLS, err = comm.TLSConfig(f.TLSCert, f.TLSKey, f.TLSCA); err != nil {
			return comm.Options{}, err
		}
	}
	return o, nil
}

// Connect resolves the worker's place and forms the mesh.
func (f *Flags) Connect(ctx context.Context, getenv func(string) string, logf func(string, ...any)) (*comm.TCP, error) {
	o, err := f.Options(getenv, logf)
	if err != nil {
		return nil, err
	}
	return comm.Connect(ctx, o)
}
