package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
)

func init() {
	commands["version"] = command{"print graft's version and the commit it was built from (also graft --version)", runVersion}
}

// flagError is a command line the flags of command cmd refuse. Besides its
// one-line message, run points to the command's help.
type flagError struct {
	err error
	cmd string // "train", "bench kernels", …
}

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// helpHint is the line run prints under an error caused by the command line.
func helpHint(err error) string {
	if fe := (flagError{}); errors.As(err, &fe) {
		return fmt.Sprintf("run 'graft %s -h' for help", fe.cmd)
	}
	return ""
}

// undefinedFlag and flagName recognise package flag's messages, to word them
// with the double dash graft's help uses.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagName      = regexp.MustCompile(`(^|\s)-(\w[\w-]*)`)
)

// explainFlagError turns an error of fs.Parse into a one-line message: an
// unknown flag with the nearest defined ones, otherwise flag's own message
// with its flags written --name.
func explainFlagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return fmt.Errorf("unknown flag --%s%s", m[1], didYouMean("--", m[1], names))
	}
	return errors.New(flagName.ReplaceAllString(msg, "$1--$2"))
}

// unknownName is the usage error for a name that is not one of known (a
// subcommand, task or benchmark), suggesting the nearest.
func unknownName(what, name string, known []string) error {
	return usageError{fmt.Errorf("unknown %s %q%s", what, name, didYouMean("", name, known))}
}

// didYouMean is "; did you mean X?" naming the candidates nearest to name,
// or "" when none is close enough to be a likely typo.
func didYouMean(prefix, name string, candidates []string) string {
	near := nearest(name, candidates)
	if len(near) == 0 {
		return ""
	}
	for i := range near {
		near[i] = prefix + near[i]
	}
	if len(near) == 1 {
		return "; did you mean " + near[0] + "?"
	}
	return "; did you mean " + strings.Join(near[:len(near)-1], ", ") + " or " + near[len(near)-1] + "?"
}

// nearest returns the candidates closest to name in edit distance (at most
// 1 for names of up to four letters, 2 for longer), or those name is a
// prefix of when none is that close; at most three, sorted.
func nearest(name string, candidates []string) []string {
	limit := 1
	switch n := len([]rune(name)); {
	case n < 2:
		limit = 0 // one letter for another is no typo to guess from
	case n > 4:
		limit = 2
	}
	best, near := limit+1, []string(nil)
	for _, c := range candidates {
		switch d := editDistance(strings.ToLower(name), strings.ToLower(c)); {
		case d > limit:
		case d < best:
			best, near = d, []string{c}
		case d == best:
			near = append(near, c)
		}
	}
	if near == nil && len(name) >= 2 {
		for _, c := range candidates {
			if strings.HasPrefix(c, name) {
				near = append(near, c)
			}
		}
	}
	sort.Strings(near)
	if len(near) > 3 {
		return nil // too many to be a typo of one of them
	}
	return near
}

// editDistance is the optimal-string-alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours cost one.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}

// newFlagSet is the flag set of command name ("train", "bench kernels"):
// errors are returned, not printed (parseFlags words them), and -h shows
// the command line, the command's summary and its flags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		sub, isSub := subcommands[name]
		if isSub {
			fmt.Fprintf(fs.Output(), "usage: graft %s %s\n\n%s\n", name, sub.args, sub.summary)
		} else {
			fmt.Fprintf(fs.Output(), "usage: graft %s [flags]\n", name)
		}
		top, _, _ := strings.Cut(name, " ")
		if c, ok := commands[top]; ok && top == name {
			fmt.Fprintf(fs.Output(), "\n%s\n", upperFirst(c.summary))
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// subcommands are the arguments and summary each subcommand's -h shows.
var subcommands = map[string]struct{ args, summary string }{
	"data info":            {"<name|path> [flags]", "Describes a dataset: its nodes, edges, features, classes and splits, its degrees, and the time and\nmemory its loading took."},
	"data list":            {"[flags]", "Lists the named datasets and whether the data directory holds each."},
	"data generate":        {"<spec> --out DIR [flags]", "Writes a generated graph (sbm:..., rmat:...) to DIR in graft's .npy layout, for graft train\n--dataset DIR."},
	"bench kernels":        {"[flags]", "Times graft's compute kernels against a STREAM triad, the memory bandwidth they can reach."},
	"bench train":          {"[flags]", "Times training epochs and their peak memory: full-graph on generated graphs (and Amazon Computers\nwhen the data directory holds it), or with --sampler on mini-batches."},
	"bench sample":         {"[flags]", "Times the mini-batch samplers: seeds and sampled edges per second."},
	"worker selftest":      {"[flags]", "Forms the workers' mesh and checks every collective's result, so that passing proves the processes\nexchanged data (run under graft launch, torchrun, srun or mpirun)."},
	"worker bench":         {"[flags]", "Times all-reduce and all-to-all between the workers, and a plain copy of the same bytes for scale\n(run under graft launch, torchrun, srun or mpirun)."},
	"decentral regression": {"[flags]", "Trains the regression task with one agent per node, each talking only to its neighbours, and\nreports the metric against a centralized reference."},
	"decentral power":      {"[flags]", "Trains the wireless power-allocation task with one agent per node, each talking only to its neighbours, and\nreports the metric against a centralized reference."},
	"decentral scheduling": {"[flags]", "Trains the link-scheduling task with one agent per node, each talking only to its neighbours, and\nreports the metric against a centralized reference."},
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// commandNames are the subcommands, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// runHelp is `graft help [command [subcommand]]`: the list of commands, or
// the help of one, on stdout.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "graft help: %v\n", unknownName("command", args[0], commandNames()))
		fmt.Fprintln(stderr, "run 'graft help' for the list")
		return 2
	}
	// A command prints its help where it prints messages: here, stdout.
	err := cmd.run(append(args[1:len(args):len(args)], "-h"), stdout, stdout)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "graft help %s: %s\n", strings.Join(args, " "), oneLine(err))
		return 2
	}
	return 0
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info))
	return nil
}

// versionLine describes a build: the module version ("(devel)" for a build
// from a checkout), the VCS commit and time, and the Go version. Builds
// without the information (go run, tests, -buildvcs=false) say "unknown".
func versionLine(info *debug.BuildInfo) string {
	version, goVersion := "(devel)", "unknown Go"
	settings := map[string]string{}
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
	}
	commit := "unknown"
	if rev := settings["vcs.revision"]; rev != "" {
		commit = rev
		if t := settings["vcs.time"]; t != "" {
			commit += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			commit += " with uncommitted changes"
		}
	}
	return fmt.Sprintf("graft %s, commit %s, built with %s", version, commit, goVersion)
}
