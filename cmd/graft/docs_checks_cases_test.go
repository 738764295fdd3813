package main

import (
	"fmt"
	"strings"
	"testing"
)

// describeCheck renders a parsed check for comparison in tests.
func describeCheck(c docCheck) string {
	if c.stdout != nil {
		return "stdout~" + c.stdout.String()
	}
	s := strings.Join(c.path, ".")
	if c.div != nil {
		s += "/" + strings.Join(c.div, ".")
	}
	s += " " + c.op + " " + fmt.Sprintf("%#v", c.want)
	if c.op == "within" {
		s += fmt.Sprintf(" tol=%v", c.tol)
		if c.pct {
			s += "%"
		}
	}
	return s
}

func TestDocChecksParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the checks, described and joined by " | "; or "error: SUBSTRING"
	}{
		{"test_acc >= 0.8", "test_acc >= 0.8"},
		{"test_acc>=0.8", "test_acc >= 0.8"},
		{"epochs == 200, test_acc within 0.01 of 0.82", "epochs == 200 | test_acc within 0.82 tol=0.01"},
		{"epochs == 200 and test_acc < 1", "epochs == 200 | test_acc < 1"},
		{"memory.features_bytes <= 5e5", "memory.features_bytes <= 500000"},
		{"classes.1.name == \"red\"", `classes.1.name == "red"`},
		{`split == "a, and b"`, `split == "a, and b"`},
		{"reproduces_run == true", "reproduces_run == true"},
		{"stopped_early == false", "stopped_early == false"},
		{"bytes_grad / epochs within 0.5% of 22528", "bytes_grad/epochs within 22528 tol=0.5%"},
		{"delta > -0.5", "delta > -0.5"},
		{`stdout matches "rank 0 of 2: ok over shm"`, "stdout~rank 0 of 2: ok over shm"},
		{`stdout matches "a,b" and x == 1`, "stdout~a,b | x == 1"},

		{"", "error: no check"},
		{"test_acc", "error: want a comparison"},
		{"test_acc != 0.8", "error: want a comparison"},
		{"test_acc >= ", "error: want one value"},
		{"test_acc >= 0.8 0.9", "error: want one value"},
		{"test_acc >= high", `error: "high" is not a number`},
		{"test_acc >= nan", `error: "nan" is not a number`},
		{"test_acc >= 0.8,", "error: ends in a separator"},
		{"test_acc >= 0.8 and", "error: ends in a separator"},
		{"0.8 <= test_acc", "error: is not a field path"},
		{"test-acc >= 0.8", "error: is not a field path"},
		{"memory..rest >= 0", "error: is not a field path"},
		{`split >= "public"`, "error: takes =="},
		{"reproduces_run >= true", "error: takes =="},
		{`bytes / epochs == "x"`, "error: a quotient is a number"},
		{"bytes / >= 1", "error: after /"},
		{"x within 0.1 0.8", "error: want PATH within TOLERANCE of NUMBER"},
		{"x within -1 of 0.8", "error: tolerance"},
		{"x within a% of 0.8", "error: tolerance"},
		{"x within 1 of y", `error: "y" is not a number`},
		{`x == "open`, "error: unterminated quote"},
		{"stdout matches rank", `error: want stdout matches "REGEXP"`},
		{`stdout matches "(a"`, "error: missing closing )"},
	} {
		checks, err := parseChecks(tc.in)
		var got string
		if err != nil {
			got = "error: " + err.Error()
			if !strings.HasPrefix(tc.want, "error: ") || !strings.Contains(got, strings.TrimPrefix(tc.want, "error: ")) {
				t.Errorf("parseChecks(%q): %v, want %s", tc.in, err, tc.want)
			}
			continue
		}
		var d []string
		for _, c := range checks {
			d = append(d, describeCheck(c))
		}
		if got = strings.Join(d, " | "); got != tc.want {
			t.Errorf("parseChecks(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestDocChecksEval(t *testing.T) {
	const summary = `{"test_acc":0.823,"epochs":200,"bytes_grad":4502400,"zero":0,"split":"public",` +
		`"reproduces_run":true,"memory":{"features_bytes":415400,"rest_bytes":1},"classes":[{"name":"blue"},{"name":"red"}]}`
	for _, tc := range []struct {
		check, stdout string // stdout "" means the summary above
		want          string // "" when the check holds, else a substring of its error
	}{
		{"test_acc >= 0.8", "", ""},
		{"test_acc >= 0.9", "", "test_acc is 0.823"},
		{"test_acc > 0.823", "", "test_acc is 0.823"},
		{"test_acc < 0.823", "", "test_acc is 0.823"},
		{"test_acc <= 0.823", "", ""},
		{"test_acc == 0.823", "", ""},
		{"test_acc == 0.82", "", "test_acc is 0.823"},
		{"test_acc within 0.01 of 0.82", "", ""},
		{"test_acc within 0.001 of 0.82", "", "test_acc is 0.823"},
		{"test_acc within 0.5% of 0.82", "", ""},
		{"test_acc within 0.3% of 0.82", "", "test_acc is 0.823"},
		{"epochs == 200", "", ""},
		{"memory.features_bytes == 415400", "", ""},
		{"bytes_grad / epochs within 0.5% of 22528", "", ""},
		{"bytes_grad / epochs == 22528", "", "bytes_grad / epochs is 22512"},
		{"bytes_grad / zero >= 0", "", "zero is 0"},
		{"bytes_grad / split >= 0", "", "not two numbers"},
		{`split == "public"`, "", ""},
		{`split == "random"`, "", `split is "public"`},
		{"split == 1", "", `split is "public", not a number`},
		{"reproduces_run == true", "", ""},
		{"reproduces_run == false", "", "reproduces_run is true"},
		{"reproduces_run >= 1", "", "not a number"},
		{`classes.1.name == "red"`, "", ""},
		{`classes.2.name == "red"`, "", "no field classes.2 (a list of 2)"},
		{"test_accuracy >= 0.8", "", "no field test_accuracy (the summary has bytes_grad, classes, epochs,"},
		{"memory.graph_bytes >= 0", "", "no field memory.graph_bytes (memory has features_bytes, rest_bytes)"},
		{"test_acc.x >= 0", "", "no field test_acc.x (test_acc is 0.823)"},
		{"epochs / nothing >= 0", "", "no field nothing"},
		{"test_acc >= 0.8", "{\"test_acc\":0.85}\n[rank 1] {\"test_acc\":0.1}\n", ""},
		{"test_acc >= 0.9", "[rank 1] {\"test_acc\":0.95}\n{\"test_acc\":0.85}\n", "test_acc is 0.85"},
		{"test_acc >= 0.8", "epochs 200\ntest acc 0.82\n", "standard output is not a JSON summary"},
		{"test_acc >= 0.8", "{\"test_acc\":0.9}\n{\"test_acc\":0.9}\n", "more than one JSON value"},
		{`stdout matches "ok over (shm|tcp)"`, "rank 0 of 2: ok over shm (...)\n[rank 1] rank 1 of 2: ok over shm (...)\n", ""},
		{`stdout matches "ok over tcp"`, "rank 0 of 2: ok over shm (...)\n", `does not match "ok over tcp"`},
	} {
		checks, err := parseChecks(tc.check)
		if err != nil {
			t.Fatalf("%q: %v", tc.check, err)
		}
		stdout := tc.stdout
		if stdout == "" {
			stdout = summary + "\n"
		}
		failed := runChecks(docCommand{file: "x.md", line: 3, checks: checks}, stdout)
		switch {
		case tc.want == "" && len(failed) > 0:
			t.Errorf("%q: %s, want it to hold", tc.check, failed[0])
		case tc.want != "" && len(failed) == 0:
			t.Errorf("%q holds, want an error with %q", tc.check, tc.want)
		case tc.want != "" && !strings.Contains(failed[0], tc.want):
			t.Errorf("%q: %s, want an error with %q", tc.check, failed[0], tc.want)
		case tc.want != "" && !strings.HasPrefix(failed[0], "x.md:3: the docs test checks "+checks[0].text+": "):
			t.Errorf("%q: %s, want it to name the file, the line and the check", tc.check, failed[0])
		}
	}
}

func TestDocMarker(t *testing.T) {
	for _, tc := range []struct {
		comment string
		extra   string // the flags added, joined by spaces
		checks  int
		err     string
	}{
		{"train a GCN on Cora", "", 0, ""},
		{"the docs test adds --epochs 5", "--epochs 5", 0, ""},
		{"no recipe: planetoid hyperparameters; the docs test adds --epochs 5", "--epochs 5", 0, ""},
		{"the docs test checks test_acc >= 0.8", "", 1, ""},
		{"the docs test adds --quick and checks rounds_per_batch == 9, drop == 0", "--quick", 2, ""},
		{"SAGE, 3 layers; the docs test adds --quick --reps 1 and checks epochs == 1", "--quick --reps 1", 1, ""},
		{"the docs test adds", "", 0, "want"},
		{"the docs test adds  and checks x == 1", "", 0, "adds no flags"},
		{"the docs test verifies test_acc >= 0.8", "", 0, "want"},
		{"the docs test checks test_acc", "", 0, "want a comparison"},
		{"the docs test adds --quick and checks ", "", 0, "no check"},
	} {
		extra, checks, err := docMarker(tc.comment)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one with %q", tc.comment, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.comment, err)
		case tc.err == "" && (strings.Join(extra, " ") != tc.extra || len(checks) != tc.checks):
			t.Errorf("%q: adds %q and %d checks, want %q and %d", tc.comment, extra, len(checks), tc.extra, tc.checks)
		}
	}
}

func TestWithJSON(t *testing.T) {
	jsonCheck, _ := parseChecks("test_acc >= 0.8")
	stdoutCheck, _ := parseChecks(`stdout matches "ok"`)
	for _, tc := range []struct {
		args   string
		checks []docCheck
		want   string
	}{
		{"train", nil, "train"},
		{"train", stdoutCheck, "train"},
		{"train", jsonCheck, "train --json"},
		{"train --json", jsonCheck, "train --json"},
		{"train --json=true --epochs 5", jsonCheck, "train --json=true --epochs 5"},
		{"launch --nproc 2 -- train", jsonCheck, "launch --nproc 2 -- train --json"},
	} {
		args := strings.Fields(tc.args)
		got, added := withJSON(args, tc.checks)
		if strings.Join(got, " ") != tc.want || added != (tc.want != tc.args) {
			t.Errorf("withJSON(%q) = %q, %v; want %q", tc.args, got, added, tc.want)
		}
		if strings.Join(args, " ") != tc.args {
			t.Errorf("withJSON(%q) changed its argument to %q", tc.args, args)
		}
	}
}

func TestDocsCommandChecksExtraction(t *testing.T) {
	doc := "```sh\n" +
		"graft train   # the docs test checks test_acc within 0.01 of 0.82\n" +
		"graft train --dataset x \\\n    --epochs 500   # the docs test adds --epochs 3 and checks epochs == 3\n" +
		"graft data info cora\n" +
		"# the docs test checks nodes == 2708, split.train == 140\n" +
		"# the docs test checks split.test == 1000\n" +
		"graft train --save m.safetensors && graft evaluate --model-file m.safetensors   # the docs test checks reproduces_run == true\n" +
		"```\n"
	var got []string
	for _, b := range codeBlocks(doc) {
		cmds, err := commandsOf("x.md", b)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			var d []string
			for _, k := range c.checks {
				d = append(d, describeCheck(k))
			}
			got = append(got, fmt.Sprintf("%d %q %q [%s]", c.line, c.args, c.extra, strings.Join(d, " | ")))
		}
	}
	want := []string{
		`2 ["train"] [] [test_acc within 0.82 tol=0.01]`,
		`3 ["train" "--dataset" "x" "--epochs" "500"] ["--epochs" "3"] [epochs == 3]`,
		`5 ["data" "info" "cora"] [] [nodes == 2708 | split.train == 140 | split.test == 1000]`,
		`8 ["train" "--save" "m.safetensors"] [] []`,
		`8 ["evaluate" "--model-file" "m.safetensors"] [] [reproduces_run == true]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("extracted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range [][]string{
		{"# the docs test checks test_acc >= 0.8", "graft train"},
		{"graft train", "go test ./...", "# the docs test checks test_acc >= 0.8"},
		{"graft worker selftest   # not run by the docs test: needs srun", "# the docs test checks x == 1"},
		{"graft train   # the docs test checks test_acc >= high"},
		{"graft train", "# the docs test checks test_acc"},
		{"graft train   # the docs test verifies test_acc >= 0.8"},
	} {
		var block []codeLine
		for i, l := range bad {
			block = append(block, codeLine{i + 1, l})
		}
		if _, err := commandsOf("x.md", block); err == nil || !strings.HasPrefix(err.Error(), "x.md:") {
			t.Errorf("%q: error %v, want one naming x.md and the line", bad, err)
		}
	}
}

// A marker the docs test would not apply is refused, naming its file and
// line, rather than ignored: flags on a line of their own, a skip marker
// away from its command, a marker on a line that is not a graft command,
// or one the grammar does not know.
func TestDocsCommandUnappliedMarkers(t *testing.T) {
	for _, bad := range [][]string{
		{"graft train", "# the docs test adds --epochs 3 and checks epochs == 3"},
		{"graft train", "# the docs test adds --epochs 3"},
		{"graft train", "# not run by the docs test: needs srun"},
		{"graft train", "# the docs test: checks epochs == 3"},
		{"graft train", "go test ./...   # the docs test checks ok == true"},
		{"graft train", "graft train: lost rank 2   # the docs test checks epochs == 3"},
		{"graft worker selftest   # not run by the docs test: needs srun; the docs test checks x == 1"},
		{"graft train   # slow for the docs test"},
		{"graft train", "    # the docs test adds --epochs 3"},
	} {
		var block []codeLine
		for i, l := range bad {
			block = append(block, codeLine{i + 1, l})
		}
		want := fmt.Sprintf("x.md:%d: ", len(bad))
		if _, err := commandsOf("x.md", block); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v, want one starting %q", bad, err, want)
		}
	}
}
