package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/train/decentral"
)

// A mistyped flag, on any command, is one line naming the nearest flags
// and one pointing to the command's help: not the usage.
func TestMistypedFlag(t *testing.T) {
	tests := []struct {
		args     []string
		wantLine string
		wantHint string
	}{
		{[]string{"train", "--epoch", "5"}, "graft train: unknown flag --epoch; did you mean --epochs?", "run 'graft train -h' for help"},
		{[]string{"--epoch", "5"}, "graft train: unknown flag --epoch; did you mean --epochs?", "run 'graft train -h' for help"},
		{[]string{"train", "--hiden", "8"}, "graft train: unknown flag --hiden; did you mean --hidden?", "run 'graft train -h' for help"},
		{[]string{"train", "--wieght-decay", "0"}, "graft train: unknown flag --wieght-decay; did you mean --weight-decay?", "run 'graft train -h' for help"},
		{[]string{"train", "--frobnicate"}, "graft train: unknown flag --frobnicate", "run 'graft train -h' for help"},
		{[]string{"train", "--epochs"}, "graft train: flag needs an argument: --epochs", "run 'graft train -h' for help"},
		{[]string{"bench", "kernels", "--rep", "1"}, "graft bench: unknown flag --rep; did you mean --reps?", "run 'graft bench kernels -h' for help"},
		{[]string{"partition", "--part", "2"}, "graft partition: unknown flag --part; did you mean --parts?", "run 'graft partition -h' for help"},
		{[]string{"data", "info", "cora", "--jsn"}, "graft data: unknown flag --jsn; did you mean --json?", "run 'graft data info -h' for help"},
		{[]string{"decentral", "power", "--sed", "2"}, "graft decentral: unknown flag --sed; did you mean --seed?", "run 'graft decentral power -h' for help"},
		{[]string{"plot", "--ot", "x.png"}, "graft plot: unknown flag --ot; did you mean --o or --out?", "run 'graft plot -h' for help"},
		{[]string{"launch", "--nprc", "2", "train"}, "graft launch: unknown flag --nprc; did you mean --nproc?", "run 'graft launch -h' for help"},
		{[]string{"worker", "bench", "--mb", "1"}, "graft worker: unknown flag --mb; did you mean --mib?", "run 'graft worker bench -h' for help"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runGraft(t, tt.args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if want := tt.wantLine + "\n" + tt.wantHint + "\n"; stderr != want {
				t.Errorf("stderr\n%s\nwant\n%s", stderr, want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

// Unknown commands, and unknown subcommands and tasks, name the nearest.
func TestUnknownCommand(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"trian"}, `graft: unknown command "trian"; did you mean train?` + "\nrun 'graft help' for the list\n"},
		{[]string{"partiton"}, `graft: unknown command "partiton"; did you mean partition?` + "\nrun 'graft help' for the list\n"},
		{[]string{"zzzzzz"}, `graft: unknown command "zzzzzz"` + "\nrun 'graft help' for the list\n"},
		{[]string{"bench", "kernel"}, `graft bench: unknown benchmark "kernel"; did you mean kernels?` + "\n"},
		{[]string{"decentral", "regresion"}, `graft decentral: unknown task "regresion"; did you mean regression?` + "\n"},
		{[]string{"decentral", "tabel"}, `graft decentral: unknown task "tabel"; did you mean table?` + "\n"},
		{[]string{"data", "lsit"}, `graft data: unknown subcommand "lsit"; did you mean list?` + "\n"},
		{[]string{"worker", "selftst"}, `graft worker: unknown worker command "selftst"; did you mean selftest?` + "\n"},
		{[]string{"help", "trian"}, `graft help: unknown command "trian"; did you mean train?` + "\nrun 'graft help' for the list\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runGraft(t, tt.args...)
			if code != 2 || stderr != tt.want {
				t.Errorf("exit code %d, stderr\n%s\nwant 2 and\n%s", code, stderr, tt.want)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	flags := []string{"epochs", "hidden", "heads", "lr", "layers", "o", "out", "seed", "save", "weight-decay"}
	tests := []struct {
		name string
		want string
	}{
		{"epoch", "epochs"},
		{"epcohs", "epochs"}, // neighbours swapped
		{"Epochs", "epochs"},
		{"lrr", "lr"},
		{"weight", "weight-decay"}, // a prefix
		{"xyz", ""},
		{"s", ""}, // too short to guess from
		{"sed", "seed"},
		{"ot", "o out"},
	}
	for _, tt := range tests {
		if got := strings.Join(nearest(tt.name, flags), " "); got != tt.want {
			t.Errorf("nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// graft help COMMAND is the command's -h, on stdout.
func TestHelpCommand(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in the help
	}{
		{[]string{"help", "train"}, []string{"usage: graft train [flags]", "-epochs", "-hidden", "-model"}},
		{[]string{"help", "partition"}, []string{"-parts", "-method"}},
		{[]string{"help", "bench", "kernels"}, []string{"usage: graft bench kernels [flags]", "-reps"}},
		{[]string{"help", "decentral"}, []string{"graft decentral table DIR", "graft decentral plot"}},
		{[]string{"help", "decentral", "table"}, []string{"usage: graft decentral table DIR"}},
		{[]string{"help", "data"}, []string{"graft data info"}},
		{[]string{"help", "launch"}, []string{"-nproc"}},
		{[]string{"help"}, []string{"decentral", "table|plot", "version"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runGraft(t, tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("help lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
	// The same help as -h gives.
	_, help, _ := runGraft(t, "help", "train")
	if _, h, _ := runGraft(t, "train", "-h"); h != help {
		t.Errorf("graft help train differs from graft train -h:\n%s\n---\n%s", help, h)
	}
}

// Every command and subcommand answers -h, -help and --help alike, as
// graft -h does: its help on stdout, nothing on stderr, exit code 0; and a
// mistyped flag with one line on stderr, nothing on stdout, exit code 2.
func TestEveryCommandHasHelp(t *testing.T) {
	all := [][]string{
		{"train"}, {"partition"}, {"plot"}, {"launch"}, {"version"}, {"predict"}, {"evaluate"},
		{"data"}, {"data", "info"}, {"data", "list"}, {"data", "generate"},
		{"bench"}, {"bench", "kernels"}, {"bench", "train"}, {"bench", "sample"},
		{"worker"}, {"worker", "selftest"}, {"worker", "bench"},
		{"decentral"}, {"decentral", "regression"}, {"decentral", "power"}, {"decentral", "scheduling"},
		{"decentral", "table"}, {"decentral", "plot"},
	}
	listed := map[string]bool{}
	for _, args := range all {
		listed[args[0]] = true
	}
	for _, name := range commandNames() {
		if !listed[name] {
			t.Errorf("command %s is not in this test's table", name)
		}
	}
	_, topHelp, _ := runGraft(t, "-h")
	if !strings.Contains(topHelp, "Commands:") {
		t.Fatalf("graft -h printed no list of commands on stdout: %q", topHelp)
	}
	for _, args := range all {
		for _, h := range []string{"-h", "-help", "--help"} {
			t.Run(strings.Join(append(args, h), " "), func(t *testing.T) {
				code, stdout, stderr := runGraft(t, append(args, h)...)
				if code != 0 || stderr != "" {
					t.Errorf("exit code %d, stderr %q; want 0 and nothing on stderr", code, stderr)
				}
				if !strings.Contains(stdout, "usage:") || !strings.Contains(stdout, "graft "+args[0]) {
					t.Errorf("no usage line on stdout:\n%s", stdout)
				}
				if strings.Contains(stdout, "Usage:") {
					t.Errorf("\"Usage:\" beside the commands' \"usage:\" in:\n%s", stdout)
				}
				checkHelpText(t, args, stdout)
			})
		}
		if args[0] == "version" || len(args) == 1 && (args[0] == "data" || args[0] == "bench" || args[0] == "worker" || args[0] == "decentral") {
			continue // no flags of their own to mistype
		}
		t.Run(strings.Join(args, " ")+" --no-such-flag", func(t *testing.T) {
			code, stdout, stderr := runGraft(t, append(args, "--no-such-flag")...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "unknown flag --no-such-flag") {
				t.Errorf("exit code %d, stdout %q, stderr %q; want 2, nothing and the error", code, stdout, stderr)
			}
		})
	}
}

// checkHelpText checks what a command's help says: the arguments a
// subcommand takes besides flags, a sentence on what it does, no empty
// "Flags:" section, and for each flag a placeholder that says what it
// takes ("-graph value" does not), a text that stands alone (flags are
// listed in name order, so "... with this status" loses its start) and
// its default last.
func checkHelpText(t *testing.T, args []string, help string) {
	t.Helper()
	positional := map[string]string{"data info": "<name|path>", "data generate": "<spec> --out DIR", "decentral table": "DIR", "plot": "FILE.jsonl..."}
	if want, ok := positional[strings.Join(args, " ")]; ok && !strings.Contains(strings.SplitN(help, "\n", 2)[0], want) {
		t.Errorf("the usage line does not name the arguments %q:\n%s", want, help)
	}
	if paragraphs := strings.Split(strings.TrimSpace(help), "\n\n"); len(paragraphs) < 2 || strings.HasPrefix(paragraphs[1], "Flags:") {
		t.Errorf("no sentence on what the command does:\n%s", help)
	}
	if strings.HasSuffix(strings.TrimSpace(help), "Flags:") {
		t.Errorf("an empty Flags: section:\n%s", help)
	}
	lines := strings.Split(help, "\n")
	for i, line := range lines {
		if f := strings.Fields(line); strings.HasPrefix(line, "  -") && len(f) == 2 && f[1] == "value" {
			t.Errorf("%q: the placeholder says nothing of what the flag takes", line)
		}
		if strings.HasPrefix(line, "  -") && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "...") {
			t.Errorf("%q: its text %q continues another flag's", line, strings.TrimSpace(lines[i+1]))
		}
		if strings.HasPrefix(line, "  -") && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "(default") {
			t.Errorf("%q: its text starts with its default, which the others give last", line)
		}
	}
}

// A -h after launch's flags is the launched command's, not launch's, and
// one after "--" is an argument.
func TestAsksHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"launch", "--nproc", "2", "-h"}, true},
		{[]string{"launch", "--nproc", "2", "train", "-h"}, false},
		{[]string{"launch", "--nproc", "2", "--", "train", "--help"}, false},
		{[]string{"data", "info", "cora", "--help"}, true},
		{[]string{"plot", "--", "-h"}, false},
	} {
		if got := asksHelp(tc.args[0], tc.args[1:]); got != tc.want {
			t.Errorf("asksHelp(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// -h shows each default once: none both in the text and as flag's
// "(default …)".
func TestHelpShowsDefaultsOnce(t *testing.T) {
	for _, args := range [][]string{{"train"}, {"partition"}, {"bench", "kernels"}, {"bench", "train"}, {"bench", "sample"},
		{"decentral", "power"}, {"worker", "bench"}, {"worker", "selftest"}, {"launch"}, {"data", "info"}} {
		_, help, _ := runGraft(t, append(args, "-h")...)
		for _, line := range strings.Split(help, "\n") {
			// flag appends " (default X)" to a flag's text when X is not
			// the zero value.
			i := strings.LastIndex(line, " (default ")
			if i < 0 || !strings.HasSuffix(line, ")") {
				continue
			}
			text, def := line[:i], line[i+1:]
			if strings.Count(def, ")") > 1 {
				continue // "(default" inside the text, flag added none
			}
			if strings.Contains(text, "(default") || def == "(default -1)" {
				t.Errorf("graft %s -h: %q shows its default twice, or a sentinel", strings.Join(args, " "), strings.TrimSpace(line))
			}
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, stdout, stderr := runGraft(t, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("graft %s: exit code %d, stderr %q", args[0], code, stderr)
		}
		info, _ := debug.ReadBuildInfo()
		if stdout != versionLine(info)+"\n" || !strings.HasPrefix(stdout, "graft ") || !strings.Contains(stdout, "commit ") {
			t.Errorf("graft %s printed %q", args[0], stdout)
		}
	}
}

func TestVersionLine(t *testing.T) {
	tests := []struct {
		info *debug.BuildInfo
		want string
	}{
		{nil, "graft (devel), commit unknown, built with unknown Go"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"graft (devel), commit unknown, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "c0f8b06dc1c3e046282c3d6225d5c60d8bb6ca10"}, {Key: "vcs.time", Value: "2026-11-26T01:42:11Z"},
			{Key: "vcs.modified", Value: "false"}}},
			"graft v0.3.0, commit c0f8b06dc1c3e046282c3d6225d5c60d8bb6ca10 (2026-11-26T01:42:11Z), built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"graft (devel), commit abc with uncommitted changes, built with go1.26.8"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.info); got != tt.want {
			t.Errorf("versionLine = %q, want %q", got, tt.want)
		}
	}
}

// The scheduling summary counts rounds, messages and bytes once: the
// totals are what the history's rounds reach, the per-batch numbers are
// their mean, and both modes (one sample per batch) are that cost, acting
// included; the text summary prints the same numbers as the JSON.
func TestDecentralSchedulingCounts(t *testing.T) {
	code, stdout, stderr := runGraft(t, "decentral", "scheduling", "--quick", "--json")
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	var r decentral.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	checkDecentralCounts(t, &r)
	perBatch := decentral.Cost{Rounds: r.RoundsPerBatch, Messages: r.MessagesPerBatch, Bytes: r.BytesPerBatch}
	if r.WithPiggyback != perBatch || r.WithoutPiggyback != perBatch {
		t.Errorf("modes %+v and %+v, want both the measured %+v", r.WithPiggyback, r.WithoutPiggyback, perBatch)
	}
	// 3 layers of one hop: 3 rounds to act, 6 to train.
	if r.RoundsPerBatch != 9 || !strings.Contains(r.RoundsFormula, "acting: L·K = 3 rounds") {
		t.Errorf("%d rounds per batch, formula %q; want 9 = 3 acting + 6 training", r.RoundsPerBatch, r.RoundsFormula)
	}
	_, text, _ := runGraft(t, "decentral", "scheduling", "--quick")
	for _, want := range []string{
		fmt.Sprintf("all %d mini-batches: %d rounds, %d messages, %d bytes\n", r.Batches, r.Total.Rounds, r.Total.Messages, r.Total.Bytes),
		fmt.Sprintf("per mini-batch: %d rounds, %d messages, %d bytes\n", r.RoundsPerBatch, r.MessagesPerBatch, r.BytesPerBatch),
		fmt.Sprintf("  with piggyback    %d rounds, %d messages, %d bytes\n", r.RoundsPerBatch, r.MessagesPerBatch, r.BytesPerBatch),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}

// In the tasks of one fixed graph, the mode that ran costs what was
// measured for it.
func TestDecentralRegressionCounts(t *testing.T) {
	code, stdout, stderr := runGraft(t, "decentral", "regression", "--quick", "--piggyback", "--json")
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	var r decentral.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	checkDecentralCounts(t, &r)
	if perBatch := (decentral.Cost{Rounds: r.RoundsPerBatch, Messages: r.MessagesPerBatch, Bytes: r.BytesPerBatch}); perBatch != r.WithPiggyback {
		t.Errorf("per batch %+v, measured with piggyback %+v", perBatch, r.WithPiggyback)
	}
	if r.Total.Messages != int64(r.Batches)*r.MessagesPerBatch || r.Total.Bytes != int64(r.Batches)*r.BytesPerBatch {
		t.Errorf("totals %+v are not %d batches of %d messages, %d bytes", r.Total, r.Batches, r.MessagesPerBatch, r.BytesPerBatch)
	}
}

func checkDecentralCounts(t *testing.T, r *decentral.Result) {
	t.Helper()
	last := r.History[len(r.History)-1]
	if r.Batches == 0 || last.Batch != r.Batches || last.Rounds != r.Total.Rounds {
		t.Errorf("%d batches, %d rounds in all; the history ends at batch %d, round %d", r.Batches, r.Total.Rounds, last.Batch, last.Rounds)
	}
	if r.RoundsPerBatch*r.Batches != r.Total.Rounds {
		t.Errorf("%d rounds per batch × %d batches ≠ %d rounds in all", r.RoundsPerBatch, r.Batches, r.Total.Rounds)
	}
	for i := 1; i < len(r.History); i++ {
		p, q := r.History[i-1], r.History[i]
		if (q.Rounds - p.Rounds) != r.RoundsPerBatch*(q.Batch-p.Batch) {
			t.Errorf("history %d→%d: %d rounds for %d batches of %d", p.Batch, q.Batch, q.Rounds-p.Rounds, q.Batch-p.Batch, r.RoundsPerBatch)
		}
	}
	n := int64(r.Batches)
	if d := r.Total.Messages - n*r.MessagesPerBatch; d < -n/2 || d > n/2 {
		t.Errorf("%d messages in all, %d per batch", r.Total.Messages, r.MessagesPerBatch)
	}
	if d := r.Total.Bytes - n*r.BytesPerBatch; d < -n/2 || d > n/2 {
		t.Errorf("%d bytes in all, %d per batch", r.Total.Bytes, r.BytesPerBatch)
	}
}
