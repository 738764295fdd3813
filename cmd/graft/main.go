package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/graft-gnn/graft/internal/cpuid"
)

type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands is filled by the init functions of the subcommand files.
var commands = map[string]command{}

// gcPercent is the collector's target heap growth unless GOGC says
// otherwise. graft's heap is mostly pointer-free float slabs, which the
// collector marks in constant time, so collecting at 25% growth instead of
// Go's 100% costs little CPU and lowers the peak memory of a large run by
// about a fifth.
const gcPercent = 25

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code. Errors
// are printed as one line; usage errors also say where to find help.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{"train"}
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		return runHelp(args[1:], stdout, stderr)
	case "--version", "-version":
		args = append([]string{"version"}, args[1:]...)
	}
	if strings.HasPrefix(args[0], "-") { // flags without a command are train's
		args = append([]string{"train"}, args...)
	}
	name := args[0]
	if cpuid.EnvErr != nil {
		fmt.Fprintf(stderr, "graft: %v\n", cpuid.EnvErr)
		return 2
	}
	watchLauncher() // a worker of graft launch stops when the launcher is gone
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "graft: %v\n", unknownName("command", name, commandNames()))
		fmt.Fprintln(stderr, "run 'graft help' for the list")
		return 2
	}
	// Help goes where graft -h and graft help print it, to stdout, from
	// every command and subcommand; errors stay on stderr.
	msgs := stderr
	if asksHelp(name, args[1:]) {
		msgs = stdout
	}
	err := cmd.run(args[1:], stdout, msgs)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "graft %s: %s\n", name, oneLine(err))
	if hint := helpHint(err); hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// asksHelp reports whether command name's arguments ask for its help: a
// -h, -help or --help before any "--". Launch's are its own flags only:
// the command it starts, after them, may ask for its own.
func asksHelp(name string, args []string) bool {
	if name == "launch" {
		_, err := parseLaunchFlags(args, io.Discard)
		return errors.Is(err, flag.ErrHelp)
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "graft trains graph neural networks on one machine or many.")
	fmt.Fprintln(w, "\nUsage: graft <command> [flags]   (no command: graft train)")
	fmt.Fprintln(w, "\nCommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'graft help <command>' or 'graft <command> -h' for a command's flags;")
	fmt.Fprintln(w, "'graft --version' prints the version.")
}

// usageError marks errors caused by the command line rather than the work.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// parseFlags parses args into fs. Help (-h) goes to stderr, which run
// makes stdout for a command line that asks for help; an error is
// one line, an unknown flag naming the nearest defined ones, that run
// prints with a pointer to the help instead of the whole of it.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	help := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		help()
		return err
	}
	return usageError{flagError{explainFlagError(fs, err), fs.Name()}}
}

// parseFlagsAnywhere is parseFlags for commands whose arguments are files:
// flags may stand before, between or after them, as people type
// "graft plot m.jsonl -o m.png" (package flag stops at the first
// non-flag). It returns the other arguments in order; all after "--" are
// taken as they are.
func parseFlagsAnywhere(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(fs, args, stderr); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
