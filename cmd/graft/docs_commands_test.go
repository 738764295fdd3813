package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/graft-gnn/graft/dataset"
)

// The docs-commands test runs every graft command shown in a code block of
// README.md or docs/*.md, so that the documentation cannot drift from the
// program. A command is a code-block line that starts with "graft ",
// "$ graft " or "go run ./cmd/graft"; a trailing backslash continues it on
// the next line, and "&&" chains commands. The commands of one code block
// run in order, in one fresh directory, so a block may write a file and
// then read it. A trailing comment can carry markers:
//
//	graft train --epochs 1000 ...   # the docs test adds --epochs 3
//	graft train                     # the docs test checks test_acc >= 0.8
//	graft worker selftest           # not run by the docs test: needs srun
//
// The first appends the flags after "adds" (a repeated flag takes the last
// value), to keep the test short; the second states what the command must
// produce (docs_checks_test.go has the grammar; "adds FLAGS and checks
// CHECKS" does both, and a comment line of its own right after a command
// may carry its checks); the third skips a command that needs a cluster, a
// container runtime or several machines. A line that says "the docs test"
// where no marker applies (flags on a line of their own, a marker on a
// line that is not a graft command, wording the grammar does not know)
// fails the extraction with its file and line. Commands that name a dataset
// read from the data directory are skipped with a message when GRAFT_DATA
// is unset. With -short only the extraction, and the checks' syntax, are
// checked.

// docCommand is one graft command found in the documentation.
type docCommand struct {
	file   string
	line   int        // 1-based line of the command's first line
	args   []string   // the arguments after "graft"
	extra  []string   // flags a "the docs test adds" marker appends
	checks []docCheck // what the command must produce, from its marker
	skip   string     // why the command is not run, from its marker
}

func (c docCommand) String() string {
	s := "graft " + strings.Join(c.args, " ")
	if len(c.extra) > 0 {
		s += " [+ " + strings.Join(c.extra, " ") + "]"
	}
	return fmt.Sprintf("%s:%d: %s", c.file, c.line, s)
}

// docBlock is the commands of one code block, run in order in one directory.
type docBlock struct {
	file string
	line int
	cmds []docCommand
}

var skipMarker = regexp.MustCompile(`not run by the docs test`)

// docsTest is what every marker says; a line of a code block that says it
// and carries no marker the test applies fails the extraction, so that no
// marker is silently ignored.
const docsTest = "the docs test"

// codeLine is one line of a code block with its 1-based line number.
type codeLine struct {
	n    int
	text string
}

// codeBlocks returns the lines of every fenced (```) and indented (four
// spaces or a tab after a blank line) code block of a Markdown text.
func codeBlocks(text string) [][]codeLine {
	var blocks [][]codeLine
	var cur []codeLine
	fenced, indented, prevBlank := false, false, true
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, cur)
		}
		cur, indented = nil, false
	}
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			if fenced {
				flush()
			}
			fenced = !fenced
		case fenced:
			cur = append(cur, codeLine{i + 1, l})
		case trimmed == "":
			if indented {
				cur = append(cur, codeLine{i + 1, ""})
			}
		case strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t"):
			if indented || prevBlank {
				indented = true
				cur = append(cur, codeLine{i + 1, l})
			}
		default:
			flush()
		}
		prevBlank = trimmed == ""
	}
	flush()
	return blocks
}

// commandsOf extracts the graft commands of one code block.
func commandsOf(file string, block []codeLine) ([]docCommand, error) {
	var cmds []docCommand
	after := -1 // the index of the line after the last command's
	for i := 0; i < len(block); i++ {
		start := block[i].n
		text := strings.TrimSpace(block[i].text)
		for strings.HasSuffix(text, `\`) && i+1 < len(block) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(block[i].text)
		}
		text = strings.TrimPrefix(text, "$ ")
		if comment, ok := strings.CutPrefix(text, "#"); ok && strings.Contains(comment, docsTest) {
			// Checks on a line of their own, for the command before.
			extra, checks, err := docMarker(comment)
			switch {
			case skipMarker.MatchString(comment):
				return nil, fmt.Errorf("%s:%d: %q on a line of its own skips nothing: put it after the command it skips", file, start, comment)
			case err != nil:
				return nil, fmt.Errorf("%s:%d: %v", file, start, err)
			case len(extra) > 0:
				return nil, fmt.Errorf("%s:%d: %q: the flags the docs test adds go in the command's own comment, not on a line of their own", file, start, comment)
			case i != after || cmds[len(cmds)-1].skip != "":
				return nil, fmt.Errorf("%s:%d: checks on a line of their own must follow the command they check", file, start)
			}
			cmds[len(cmds)-1].checks = append(cmds[len(cmds)-1].checks, checks...)
			after = i + 1
			continue
		}
		if text != "graft" && !strings.HasPrefix(text, "graft ") && !strings.HasPrefix(text, "go run ./cmd/graft") || isOutputLine(text) {
			if strings.Contains(text, docsTest) {
				return nil, fmt.Errorf("%s:%d: %q is not a graft command, so the docs test applies no marker on it", file, start, text)
			}
			continue
		}
		if skipMarker.MatchString(text) {
			// Not run, so not parsed: it may hold placeholders.
			cmdText, comment, _ := strings.Cut(text, "#")
			if strings.Count(comment, docsTest) > 1 {
				return nil, fmt.Errorf("%s:%d: %q: a command the docs test does not run takes no other marker", file, start, text)
			}
			cmds = append(cmds, docCommand{file: file, line: start, args: strings.Fields(cmdText)[1:], skip: strings.TrimSpace(comment)})
			continue
		}
		chain, comment, err := shellWords(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v (write the command out, or mark it \"# not run by the docs test: REASON\")", file, start, err)
		}
		extra, checks, err := docMarker(comment)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, start, err)
		}
		for k, words := range chain {
			args, ok := graftArgs(words)
			if !ok {
				return nil, fmt.Errorf("%s:%d: %q chains a command that is not graft", file, start, text)
			}
			c := docCommand{file: file, line: start, args: args}
			if k == len(chain)-1 {
				c.extra, c.checks = extra, checks // the marker belongs to the last command of a chain
			}
			cmds = append(cmds, c)
		}
		after = i + 1
	}
	return cmds, nil
}

// isOutputLine reports whether a line that starts with "graft" is a
// message graft prints ("graft train: lost rank 2 ...") rather than a command.
func isOutputLine(text string) bool {
	f := strings.Fields(text)
	return len(f) >= 2 && f[0] == "graft" && strings.HasSuffix(f[1], ":")
}

// graftArgs returns the arguments of a "graft ..." or "go run ./cmd/graft
// ..." command.
func graftArgs(words []string) ([]string, bool) {
	switch {
	case len(words) >= 1 && words[0] == "graft":
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/graft":
		return words[3:], true
	}
	return nil, false
}

// shellWords splits a command line as a POSIX shell would for the plain
// commands the docs show: words separated by blanks, single and double
// quotes, backslash escapes, "&&" between commands and a trailing "#"
// comment, which it returns. Anything the test cannot run faithfully —
// expansions, pipes, redirections, other separators — is an error.
func shellWords(s string) (chain [][]string, comment string, err error) {
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !inWord:
			end()
			return append(chain, words), strings.TrimSpace(s[i+1:]), nil
		case c == '&' && i+1 < len(s) && s[i+1] == '&':
			end()
			chain, words = append(chain, words), nil
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated quote")
			}
			q := s[i+1 : i+1+j]
			if strings.ContainsAny(q, "$`\\") {
				return nil, "", fmt.Errorf("expansion in %q", q)
			}
			w.WriteString(q)
			inWord, i = true, i+1+j
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			inWord, i = true, i+1
		case strings.IndexByte("$`|;<>&(){}*?", c) >= 0:
			return nil, "", fmt.Errorf("shell syntax %q", c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return append(chain, words), "", nil
}

// docPages returns the module root and the pages the docs tests read:
// README.md and docs/*.md.
func docPages(t *testing.T) (root string, files []string) {
	t.Helper()
	root = filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, append([]string{filepath.Join(root, "README.md")}, files...)
}

// docBlocks reads README.md and docs/*.md from the module root and returns
// their code blocks that hold graft commands.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	root, files := docPages(t)
	var blocks []docBlock
	for _, path := range files {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, path)
		for _, b := range codeBlocks(string(text)) {
			cmds, err := commandsOf(name, b)
			if err != nil {
				t.Error(err)
				continue
			}
			if len(cmds) > 0 {
				blocks = append(blocks, docBlock{name, b[0].n, cmds})
			}
		}
	}
	return blocks
}

// absentData names the dataset a command reads from the data directory
// when there is none, or returns "".
func absentData(args []string) string {
	if dataset.ResolveDataDir("") != "" {
		return ""
	}
	var names []string
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		switch {
		case strings.HasPrefix(a, "dataset="):
			names = append(names, strings.TrimPrefix(a, "dataset="))
		case a == "dataset" && i+1 < len(args):
			names = append(names, args[i+1])
		case a == "info" && i > 0 && args[i-1] == "data" && i+1 < len(args):
			names = append(names, args[i+1])
		}
	}
	for _, n := range names {
		for _, e := range dataset.Registry() {
			if strings.EqualFold(e.Name, n) && !e.Embedded {
				return n
			}
		}
	}
	return ""
}

// TestDocsCommandsParse checks that every documented command can be
// extracted, and that the docs do show commands.
func TestDocsCommandsParse(t *testing.T) {
	blocks := docBlocks(t)
	n := 0
	for _, b := range blocks {
		n += len(b.cmds)
	}
	if n < 10 {
		t.Fatalf("found %d graft commands in README.md and docs/*.md; the extraction is broken", n)
	}
}

// inRepository returns args with every relative path to a file of the
// repository (docs/examples/..., also as in file:PATH) made absolute: a
// block runs in a directory of its own, as a reader runs the commands
// from a checkout.
func inRepository(root string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		prefix, path := "", a
		if kind, rest, ok := strings.Cut(a, ":"); ok {
			prefix, path = kind+":", rest
		}
		if strings.Contains(path, "/") && !filepath.IsAbs(path) {
			if _, err := os.Stat(filepath.Join(root, path)); err == nil {
				out[i] = prefix + filepath.Join(root, path)
			}
		}
	}
	return out
}

// TestDocsCommandsRun runs every documented command through run; a command
// that fails fails the test.
func TestDocsCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command; -short checks only their extraction (TestDocsCommandsParse)")
	}
	t.Setenv("GRAFT_TEST_MAIN", "1") // graft launch's workers are this binary
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range docBlocks(t) {
		t.Run(strings.ReplaceAll(fmt.Sprintf("%s:%d", b.file, b.line), "/", "_"), func(t *testing.T) {
			t.Chdir(t.TempDir())
			for _, c := range b.cmds {
				if c.skip != "" {
					t.Logf("%v: %s", c, c.skip)
					continue
				}
				if name := absentData(c.args); name != "" {
					t.Skipf("%v: dataset %s needs GRAFT_DATA", c, name)
				}
				args, addedJSON := withJSON(append(inRepository(root, c.args), c.extra...), c.checks)
				var stdout, stderr bytes.Buffer
				start := time.Now()
				code := run(args, &stdout, &stderr)
				if code != 0 {
					added := ""
					if addedJSON {
						added = " (the docs test added --json for its checks)"
					}
					t.Fatalf("%v: exit status %d%s\nstderr:\n%s\nstdout (tail):\n%s", c, code, added, stderr.String(), tail(stdout.String(), 20))
				}
				if failed := runChecks(c, stdout.String()); len(failed) > 0 {
					t.Fatalf("%v: %d of %d checks failed:\n%s", c, len(failed), len(c.checks), strings.Join(failed, "\n"))
				}
				t.Logf("%v: ok in %.1fs%s", c, time.Since(start).Seconds(), checked(c))
			}
		})
	}
}

// checked says how many checks a command passed, for the log.
func checked(c docCommand) string {
	if len(c.checks) == 0 {
		return ""
	}
	if len(c.checks) == 1 {
		return ", its check holds"
	}
	return fmt.Sprintf(", its %d checks hold", len(c.checks))
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestDocsCommandExtraction(t *testing.T) {
	doc := "# Title\n\n```sh\n" +
		"go run ./cmd/graft train   # train on Cora\n" +
		"go test ./...\n" +
		"graft train --dataset cora \\\n    --epochs 500   # the docs test adds --epochs 3\n" +
		"$ graft partition --dataset cora --parts 2 --out p/ && graft launch --nproc 2 -- train --part-dir p/\n" +
		"graft worker selftest   # not run by the docs test: needs srun\n" +
		"graft plot 'a b.jsonl' -o \"c.png\"\n" +
		"graft train: lost rank 2 after epoch 29\n" +
		"graft launch --nproc 4 -- train --rank $K ...   # not run by the docs test: several machines\n" +
		"```\n\nText.\n\n    graft data list\n\n    graft data info cora\nMore text.\n"
	var got []string
	for _, b := range codeBlocks(doc) {
		cmds, err := commandsOf("x.md", b)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			s := fmt.Sprintf("%d %q %q", c.line, c.args, c.extra)
			if c.skip != "" {
				s += " skip"
			}
			got = append(got, s)
		}
	}
	want := []string{
		`4 ["train"] []`,
		`6 ["train" "--dataset" "cora" "--epochs" "500"] ["--epochs" "3"]`,
		`8 ["partition" "--dataset" "cora" "--parts" "2" "--out" "p/"] []`,
		`8 ["launch" "--nproc" "2" "--" "train" "--part-dir" "p/"] []`,
		`9 ["worker" "selftest"] [] skip`,
		`10 ["plot" "a b.jsonl" "-o" "c.png"] []`,
		`12 ["launch" "--nproc" "4" "--" "train" "--rank" "$K" "..."] [] skip`,
		`17 ["data" "list"] []`,
		`19 ["data" "info" "cora"] []`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("extracted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{
		"graft train --dataset $X",
		"graft train | tee log",
		"graft train > log",
		"graft train; graft data list",
		"graft train && ls",
		`graft train --metrics "$HOME/m.jsonl"`,
	} {
		if _, err := commandsOf("x.md", []codeLine{{1, bad}}); err == nil {
			t.Errorf("%q: extracted without error, want one", bad)
		}
	}
}
