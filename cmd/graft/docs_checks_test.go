package main

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A documented command can state what it must produce, in a marker the
// docs test checks after running it:
//
//	graft train   # the docs test checks test_acc within 0.01 of 0.82
//	graft train --dataset x   # the docs test adds --epochs 5 and checks epochs == 5
//	graft data info cora --json
//	# the docs test checks nodes == 2708, split.train == 140
//
// The marker is a trailing comment of the command, or a comment line of its
// own right after it. A check is one of
//
//	PATH OP VALUE             OP one of >= <= == > <; VALUE a number, or
//	                          with == also true, false or "a string"
//	PATH within TOL of NUMBER |PATH - NUMBER| <= TOL; TOL may end in %,
//	                          a share of |NUMBER|
//	stdout matches "REGEXP"   the command's standard output
//
// where PATH names a field of the command's JSON summary by its keys
// joined with dots (memory.features_bytes; a number indexes a list,
// classes.0.name), and may be a quotient of two fields
// (bytes_grad / epochs). Checks are separated by commas or "and". A
// command with a PATH check and no --json gets --json appended; its
// standard output must then be one JSON value (under graft launch, rank
// 0's lines, which pass unprefixed; the other ranks' "[rank K] " lines are
// dropped). A field
// the summary does not have fails the check.

// docCheck is one parsed check.
type docCheck struct {
	text   string         // as written, for messages
	stdout *regexp.Regexp // "stdout matches": the pattern
	path   []string       // the field, or the dividend of a quotient
	div    []string       // the divisor's field, if a quotient
	op     string         // ">=", "<=", "==", ">", "<" or "within"
	want   any            // float64, bool or string
	tol    float64        // within: the tolerance
	pct    bool           // within: tol is a percentage of want
}

// needsJSON reports whether the check reads the JSON summary.
func (c docCheck) needsJSON() bool { return c.stdout == nil }

// checkToken is one token of a check list: a quoted string (quoted set), an
// operator, a comma, a slash, or a word.
type checkToken struct {
	text   string
	quoted bool
}

// checkTokens splits a check list into tokens.
func checkTokens(s string) ([]checkToken, error) {
	var toks []checkToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s[i:])
			}
			toks = append(toks, checkToken{s[i+1 : i+1+j], true})
			i += j + 2
		case c == ',' || c == '/':
			toks = append(toks, checkToken{text: string(c)})
			i++
		case strings.IndexByte("<>=!", c) >= 0:
			j := i + 1
			if j < len(s) && s[j] == '=' {
				j++
			}
			toks = append(toks, checkToken{text: s[i:j]})
			i = j
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\",/<>=!", s[j]) < 0 {
				j++
			}
			toks = append(toks, checkToken{text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

var (
	pathSegment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*|[0-9]+)$`)
	checkOps    = []string{">=", "<=", "==", ">", "<"}
)

// parsePath parses a dotted field path; its first segment is a name.
func parsePath(s string) ([]string, error) {
	segs := strings.Split(s, ".")
	for i, seg := range segs {
		if !pathSegment.MatchString(seg) || (i == 0 && seg[0] >= '0' && seg[0] <= '9') {
			return nil, fmt.Errorf("%q is not a field path (names and list indices joined by dots, e.g. memory.features_bytes)", s)
		}
	}
	return segs, nil
}

// parseNumber parses a finite number.
func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// parseChecks parses a check list: checks separated by commas or "and".
func parseChecks(s string) ([]docCheck, error) {
	toks, err := checkTokens(s)
	if err != nil {
		return nil, err
	}
	var checks []docCheck
	for len(toks) > 0 {
		n := slices.IndexFunc(toks, func(t checkToken) bool { return !t.quoted && (t.text == "," || t.text == "and") })
		if n < 0 {
			n = len(toks)
		}
		c, err := parseCheck(toks[:n])
		if err != nil {
			return nil, err
		}
		checks = append(checks, c)
		if n == len(toks) {
			break
		}
		toks = toks[n+1:]
		if len(toks) == 0 {
			return nil, fmt.Errorf("%q ends in a separator", s)
		}
	}
	if len(checks) == 0 {
		return nil, fmt.Errorf("no check after \"checks\"")
	}
	return checks, nil
}

// tokensText rejoins tokens for messages.
func tokensText(toks []checkToken) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.text
		if t.quoted {
			parts[i] = strconv.Quote(t.text)
		}
	}
	return strings.Join(parts, " ")
}

// word returns the text of tok if it is an unquoted token, else "".
func word(toks []checkToken, i int) string {
	if i < len(toks) && !toks[i].quoted {
		return toks[i].text
	}
	return ""
}

// parseCheck parses the tokens of one check.
func parseCheck(toks []checkToken) (docCheck, error) {
	c := docCheck{text: tokensText(toks)}
	bad := func(format string, a ...any) (docCheck, error) {
		return docCheck{}, fmt.Errorf("check %q: %s", c.text, fmt.Sprintf(format, a...))
	}
	if len(toks) == 0 {
		return bad("empty")
	}
	if word(toks, 0) == "stdout" {
		if len(toks) != 3 || word(toks, 1) != "matches" || !toks[2].quoted {
			return bad(`want stdout matches "REGEXP"`)
		}
		re, err := regexp.Compile(toks[2].text)
		if err != nil {
			return bad("%v", err)
		}
		c.stdout = re
		return c, nil
	}
	var err error
	if c.path, err = parsePath(word(toks, 0)); err != nil {
		return bad("%v", err)
	}
	i := 1
	if word(toks, i) == "/" {
		if c.div, err = parsePath(word(toks, i+1)); err != nil {
			return bad("after /: %v", err)
		}
		i += 2
	}
	c.op = word(toks, i)
	rest := toks[min(i+1, len(toks)):]
	switch {
	case c.op == "within":
		if len(rest) != 3 || word(rest, 1) != "of" {
			return bad("want PATH within TOLERANCE of NUMBER")
		}
		tol := word(rest, 0)
		c.pct = strings.HasSuffix(tol, "%")
		if c.tol, err = parseNumber(strings.TrimSuffix(tol, "%")); err != nil || c.tol < 0 {
			return bad("tolerance %q is not a number >= 0", tol)
		}
		if c.want, err = parseNumber(word(rest, 2)); err != nil {
			return bad("%v", err)
		}
	case slices.Contains(checkOps, c.op):
		if len(rest) != 1 {
			return bad("want one value after %s", c.op)
		}
		v := word(rest, 0)
		switch {
		case rest[0].quoted:
			c.want = rest[0].text
		case v == "true" || v == "false":
			c.want = v == "true"
		default:
			if c.want, err = parseNumber(v); err != nil {
				return bad("%v", err)
			}
		}
		if _, num := c.want.(float64); !num && c.op != "==" {
			return bad("%s compares numbers; a string or true/false takes ==", c.op)
		}
		if c.div != nil {
			if _, num := c.want.(float64); !num {
				return bad("a quotient is a number")
			}
		}
	default:
		return bad("want a comparison (>=, <=, ==, >, <) or \"within\" after the field")
	}
	return c, nil
}

// summaryJSON parses a command's standard output as one JSON value, as
// rank 0 printed it under graft launch: the other ranks' lines, which
// graft launch prefixes with "[rank K] ", are left out.
func summaryJSON(stdout string) (any, error) {
	var b strings.Builder
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "[rank ") {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	dec := json.NewDecoder(strings.NewReader(b.String()))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("standard output is not a JSON summary: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("standard output holds more than one JSON value")
	}
	return v, nil
}

// lookup returns the value at path in a JSON value.
func lookup(v any, path []string) (any, error) {
	for i, seg := range path {
		at := strings.Join(path[:i+1], ".")
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				keys := make([]string, 0, len(x))
				for k := range x {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				parent := strings.Join(path[:i], ".")
				if parent == "" {
					parent = "the summary"
				}
				return nil, fmt.Errorf("the summary has no field %s (%s has %s)", at, parent, strings.Join(keys, ", "))
			}
			v = next
		case []any:
			k, err := strconv.Atoi(seg)
			if err != nil || k < 0 || k >= len(x) {
				return nil, fmt.Errorf("the summary has no field %s (a list of %d)", at, len(x))
			}
			v = x[k]
		default:
			return nil, fmt.Errorf("the summary has no field %s (%s is %v)", at, strings.Join(path[:i], "."), x)
		}
	}
	return v, nil
}

// operand returns the checked value: the field, or the quotient of two.
func (c docCheck) operand(summary any) (any, error) {
	v, err := lookup(summary, c.path)
	if err != nil || c.div == nil {
		return v, err
	}
	d, err := lookup(summary, c.div)
	if err != nil {
		return nil, err
	}
	a, aok := v.(float64)
	b, bok := d.(float64)
	switch {
	case !aok || !bok:
		return nil, fmt.Errorf("%s is %v and %s is %v, not two numbers", strings.Join(c.path, "."), v, strings.Join(c.div, "."), d)
	case b == 0:
		return nil, fmt.Errorf("%s is 0", strings.Join(c.div, "."))
	}
	return a / b, nil
}

// eval checks the command's output; summary is its parsed JSON summary,
// nil for stdout checks.
func (c docCheck) eval(stdout string, summary any) error {
	if c.stdout != nil {
		if !c.stdout.MatchString(stdout) {
			return fmt.Errorf("standard output does not match %q:\n%s", c.stdout.String(), tail(stdout, 10))
		}
		return nil
	}
	v, err := c.operand(summary)
	if err != nil {
		return err
	}
	name := strings.Join(c.path, ".")
	if c.div != nil {
		name += " / " + strings.Join(c.div, ".")
	}
	got, isNum := v.(float64)
	want, wantNum := c.want.(float64)
	if !wantNum {
		if v != c.want {
			return fmt.Errorf("%s is %#v", name, v)
		}
		return nil
	}
	if !isNum {
		return fmt.Errorf("%s is %#v, not a number", name, v)
	}
	ok := false
	switch c.op {
	case ">=":
		ok = got >= want
	case "<=":
		ok = got <= want
	case "==":
		ok = got == want
	case ">":
		ok = got > want
	case "<":
		ok = got < want
	case "within":
		tol := c.tol
		if c.pct {
			tol = c.tol / 100 * math.Abs(want)
		}
		ok = math.Abs(got-want) <= tol
	}
	if !ok {
		return fmt.Errorf("%s is %v", name, got)
	}
	return nil
}

// docMarker parses the docs-test marker in a command's comment: the flags
// "the docs test adds" and the checks it states. A comment that does not
// say "the docs test" has none; one that says it otherwise is an error.
func docMarker(comment string) (extra []string, checks []docCheck, err error) {
	i := strings.Index(comment, docsTest)
	if i < 0 {
		return nil, nil, nil
	}
	rest, _ := strings.CutPrefix(comment[i+len(docsTest):], " ")
	if r, ok := strings.CutPrefix(rest, "adds "); ok {
		flags, after, found := strings.Cut(r, " and checks ")
		extra = strings.Fields(flags)
		if len(extra) == 0 {
			return nil, nil, fmt.Errorf("%q adds no flags", comment)
		}
		if !found {
			return extra, nil, nil
		}
		rest = "checks " + after
	}
	r, ok := strings.CutPrefix(rest, "checks ")
	if !ok {
		return nil, nil, fmt.Errorf("%q: want \"the docs test adds FLAGS\", \"the docs test checks CHECKS\" or \"the docs test adds FLAGS and checks CHECKS\"", comment)
	}
	checks, err = parseChecks(r)
	return extra, checks, err
}

// withJSON returns args with --json appended when a check reads the JSON
// summary and the command does not ask for it, and whether it added it.
func withJSON(args []string, checks []docCheck) ([]string, bool) {
	if !slices.ContainsFunc(checks, docCheck.needsJSON) {
		return args, false
	}
	for _, a := range args {
		if a == "--json" || a == "-json" || strings.HasPrefix(a, "--json=") || strings.HasPrefix(a, "-json=") {
			return args, false
		}
	}
	return append(slices.Clip(args), "--json"), true
}

// runChecks evaluates every check of c against its standard output and
// returns one message per failed check.
func runChecks(c docCommand, stdout string) []string {
	var failed []string
	var summary any
	var summaryErr error
	if slices.ContainsFunc(c.checks, docCheck.needsJSON) {
		summary, summaryErr = summaryJSON(stdout)
	}
	for _, k := range c.checks {
		err := summaryErr
		if err == nil || !k.needsJSON() {
			err = k.eval(stdout, summary)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s:%d: the docs test checks %s: %v", c.file, c.line, k.text, err))
		}
	}
	return failed
}
