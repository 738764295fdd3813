package launch

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func flags(t *testing.T, args ...string) *Flags {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		env   func(string) string
		want  Place
		error string // substring of the expected error
	}{
		{name: "nothing set is one worker", env: env(), want: Place{0, 1, "", "default (one worker)"}},
		{name: "flags", args: []string{"--rank", "1", "--world", "3", "--rendezvous", "10.0.0.1:7000"}, env: env(),
			want: Place{1, 3, "10.0.0.1:7000", "flags"}},
		{name: "graft", env: env("GRAFT_RANK", "2", "GRAFT_WORLD_SIZE", "4", "GRAFT_RENDEZVOUS", "h:1"),
			want: Place{2, 4, "h:1", "graft"}},
		{name: "torchrun", env: env("RANK", "3", "WORLD_SIZE", "8", "MASTER_ADDR", "10.1.2.3", "MASTER_PORT", "29400"),
			want: Place{3, 8, "10.1.2.3:29400", "torchrun"}},
		{name: "torchrun default port", env: env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "head"),
			want: Place{0, 2, "head:29500", "torchrun"}},
		{name: "torchrun IPv6", env: env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "::1", "MASTER_PORT", "5"),
			want: Place{0, 2, "[::1]:5", "torchrun"}},
		{name: "Open MPI", env: env("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "MASTER_ADDR", "n1"),
			want: Place{1, 2, "n1:29500", "Open MPI"}},
		{name: "Slurm, first node of a compressed list", env: env("SLURM_PROCID", "5", "SLURM_NTASKS", "8",
			"SLURM_JOB_NODELIST", "gpu[07-10,12],cpu1", "MASTER_PORT", "6000"),
			want: Place{5, 8, "gpu07:6000", "Slurm"}},
		{name: "Slurm step on the allocation's last nodes", env: env("SLURM_PROCID", "0", "SLURM_NTASKS", "2",
			"SLURM_JOB_NODELIST", "n[1-4]", "SLURM_STEP_NODELIST", "n[3-4]"),
			want: Place{0, 2, "n3:29500", "Slurm"}},
		{name: "Slurm with an explicit address", args: []string{"--rendezvous", "login:9"},
			env:  env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n[1-2]"),
			want: Place{0, 2, "login:9", "Slurm"}},
		{name: "Kubernetes indexed Job", env: env("JOB_COMPLETION_INDEX", "3", "WORLD_SIZE", "4",
			"MASTER_ADDR", "train-0.train", "MASTER_PORT", "29500"),
			want: Place{3, 4, "train-0.train:29500", "Kubernetes"}},
		{name: "Kubernetes with --world", args: []string{"--world", "4"}, env: env("JOB_COMPLETION_INDEX", "0", "GRAFT_RENDEZVOUS", "a:1"),
			want: Place{0, 4, "a:1", "Kubernetes"}},
		{name: "torchrun inside Slurm wins", env: env("RANK", "6", "WORLD_SIZE", "8", "MASTER_ADDR", "m",
			"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n[1-2]"),
			want: Place{6, 8, "m:29500", "torchrun"}},
		{name: "flags agreeing with the environment", args: []string{"--rank", "1"}, env: env("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "m"),
			want: Place{1, 2, "m:29500", "torchrun"}},

		{name: "flag contradicts rank", args: []string{"--rank", "2"}, env: env("RANK", "1", "WORLD_SIZE", "4", "MASTER_ADDR", "m"),
			error: "--rank 2 contradicts the environment (torchrun says rank 1)"},
		{name: "flag contradicts size", args: []string{"--world", "3"}, env: env("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_JOB_NODELIST", "n1"),
			error: "--world 3 contradicts the environment (Slurm says 4 workers)"},
		{name: "rank without size", env: env("RANK", "1", "MASTER_ADDR", "m"), error: "torchrun sets RANK=1 but not WORLD_SIZE"},
		{name: "index without size", env: env("JOB_COMPLETION_INDEX", "1"), error: "Kubernetes sets JOB_COMPLETION_INDEX=1 but not GRAFT_WORLD_SIZE"},
		{name: "size without rank", args: []string{"--world", "2"}, env: env(), error: "no rank"},
		{name: "rank without world", args: []string{"--rank", "0"}, env: env(), error: "no world size"},
		{name: "rank too large", env: env("RANK", "4", "WORLD_SIZE", "4", "MASTER_ADDR", "m"), error: "rank 4 outside a world of 4"},
		{name: "zero workers", env: env("RANK", "0", "WORLD_SIZE", "0", "MASTER_ADDR", "m"), error: "at least 1"},
		{name: "not a number", env: env("SLURM_PROCID", "one", "SLURM_NTASKS", "2"), error: `SLURM_PROCID="one"`},
		{name: "no address", env: env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"), error: "no rendezvous address"},
		{name: "bad port", env: env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "m", "MASTER_PORT", "http"), error: "MASTER_PORT"},
		{name: "bad node list", env: env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n[3-1]"), error: "bad range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(flags(t, tc.args...), tc.env)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, tc.error)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// Given values out of range are refused, not taken as "not given".
func TestFlagsRefuseOutOfRange(t *testing.T) {
	for _, args := range [][]string{{"--rank", "-1"}, {"--rank", "-5"}, {"--world", "0"}, {"--world", "-1"}, {"--rank", "x"}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		AddFlags(fs)
		if err := fs.Parse(args); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%v: error %v, want a refusal", args, err)
		}
	}
	if f := flags(t); f.Rank != -1 || f.Size != -1 {
		t.Errorf("unset flags are rank %d, world %d; want -1 (not given)", f.Rank, f.Size)
	}
	if f := flags(t, "--rank", "0", "--world", "1"); f.Rank != 0 || f.Size != 1 {
		t.Errorf("--rank 0 --world 1 read as rank %d, world %d", f.Rank, f.Size)
	}
}

func TestExpandNodeList(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "node1", want: []string{"node1"}},
		{in: "node[01-04,07]", want: []string{"node01", "node02", "node03", "node04", "node07"}},
		{in: "a[1-2],b,c[9-10]", want: []string{"a1", "a2", "b", "c9", "c10"}},
		{in: "rack[1-2]-n[1-2]", want: []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{in: "gpu[007]", want: []string{"gpu007"}},
		{in: "", bad: true}, {in: "n[1-", bad: true}, {in: "n1]", bad: true}, {in: "n[a-b]", bad: true},
		{in: "n[5-2]", bad: true}, {in: "a,,b", bad: true}, {in: "n[1-99999999]", bad: true},
	}
	for _, tc := range cases {
		got, err := ExpandNodeList(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q expanded to %v; want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	os.WriteFile(file, []byte("9f3c07d2e81b64a5c0de\n"), 0o600)
	cases := []struct {
		name, file string
		env        func(string) string
		want       string
		error      string
	}{
		{name: "environment", env: env("GRAFT_TOKEN", "k7Qz2mW9xR4pT8vN"), want: "k7Qz2mW9xR4pT8vN"},
		{name: "file, trailing newline dropped", file: file, env: env("GRAFT_TOKEN", "ignored-ignored-ignored"), want: "9f3c07d2e81b64a5c0de"},
		{name: "missing", env: env(), error: "no job secret"},
		{name: "too short", env: env("GRAFT_TOKEN", "hunter2"), error: "at least 16"},
		// Long enough but obviously weak: runs, sequences, repeats.
		{name: "one character", env: env("GRAFT_TOKEN", "aaaaaaaaaaaaaaaaaaaaaaaa"), error: "weak"},
		{name: "sequence", env: env("GRAFT_TOKEN", "abcdefghijklmnopqrstuvwxyz"), error: "weak"},
		{name: "digits", env: env("GRAFT_TOKEN", "0123456789012345"), error: "weak"},
		{name: "repeated word", env: env("GRAFT_TOKEN", "passwordpassword"), error: "weak"},
		{name: "repeated word, cut", env: env("GRAFT_TOKEN", "hunter2hunter2hu"), error: "weak"},
		{name: "repeated pattern", env: env("GRAFT_TOKEN", "abcabcabcabcabcabc"), error: "weak"},
		{name: "two characters", env: env("GRAFT_TOKEN", "abababababababab"), error: "weak"},
		{name: "keyboard rows", env: env("GRAFT_TOKEN", "qwertyuiopasdfgh"), error: "weak"},
		{name: "sequence in alternating case", env: env("GRAFT_TOKEN", "aBcDeFgHiJkLmNoP"), error: "weak"},
		{name: "interleaved sequences", env: env("GRAFT_TOKEN", "a1b2c3d4e5f6g7h8"), error: "weak"},
		{name: "interleaved keyboard", env: env("GRAFT_TOKEN", "1q2w3e4r5t6y7u8i"), error: "weak"},
		{name: "common words", env: env("GRAFT_TOKEN", "mysecrettoken123"), error: "weak"},
		{name: "word and digits", env: env("GRAFT_TOKEN", "Password1234567!"), error: "weak"},
		{name: "unreadable file", file: filepath.Join(dir, "nope"), env: env(), error: "no such file"},
	}
	for _, tc := range cases {
		got, err := Secret(tc.file, tc.env)
		if tc.error != "" {
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("%s: got %q, %v; want an error with %q", tc.name, got, err, tc.error)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// Random secrets pass the strength check: 16 characters from a hex or
// larger alphabet, or 24 decimal digits; the estimate refuses only the
// obviously weak.
func TestRandomSecretsAreStrong(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		chars string
		n     int
	}{{"0123456789abcdef", 16}, {"0123456789ABCDEF", 16}, {"abcdefghijklmnopqrstuvwxyz0123456789", 16},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 16}, {"0123456789", 24}} {
		worst := math.Inf(1)
		for range 20000 {
			s := make([]byte, c.n)
			for i := range s {
				s[i] = c.chars[rng.IntN(len(c.chars))]
			}
			worst = min(worst, secretBits(s))
		}
		if worst < minSecretBits {
			t.Errorf("a random %d-character secret over %q is estimated at %.1f bits, under %d", c.n, c.chars, worst, minSecretBits)
		}
	}
}

// Two workers configured only through torchrun's variables form a mesh.
func TestConnectFromEnvironment(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // free it for rank 0 (a small race, harmless on loopback in a test)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			f := flags(t, "--start-timeout", "5s")
			c, err := f.Connect(context.Background(), env("RANK", fmt.Sprint(r), "WORLD_SIZE", "2",
				"MASTER_ADDR", "127.0.0.1", "MASTER_PORT", port, "GRAFT_TOKEN", "e4b19c07f25d3a86"), t.Logf)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			data := []float32{float32(r + 1)}
			if err := c.AllReduce("sum", data); err != nil {
				errs <- err
				return
			}
			if data[0] != 3 {
				err = fmt.Errorf("rank %d: sum %v, want 3", r, data[0])
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// --transport, else GRAFT_TRANSPORT, reaches the communicator's options; a
// value neither knows is an error naming where it came from.
func TestTransportFromFlagOrEnvironment(t *testing.T) {
	base := []string{"GRAFT_RANK", "0", "GRAFT_WORLD_SIZE", "2", "GRAFT_RENDEZVOUS", "127.0.0.1:1", "GRAFT_TOKEN", "e4b19c07f25d3a86"}
	for _, tc := range []struct{ flag, env, want, err string }{
		{"", "", "", ""}, {"", "tcp", "tcp", ""}, {"", " auto ", "auto", ""}, {"tcp", "", "tcp", ""}, {"tcp", "auto", "tcp", ""},
		{"", "udp", "", `GRAFT_TRANSPORT: transport "udp": want auto or tcp`},
		{"shm", "tcp", "", `--transport: transport "shm": want auto or tcp`},
	} {
		var args []string
		if tc.flag != "" {
			args = []string{"--transport", tc.flag}
		}
		o, err := flags(t, args...).Options(env(append(base, "GRAFT_TRANSPORT", tc.env)...), t.Logf)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("--transport %q, GRAFT_TRANSPORT=%q: %v; want %q", tc.flag, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || o.Transport != tc.want {
			t.Errorf("--transport %q, GRAFT_TRANSPORT=%q: transport %q, %v; want %q", tc.flag, tc.env, o.Transport, err, tc.want)
		}
	}
}
