package launch

import (
	"fmt"
	"strconv"
	"strings"
)

// maxNodes bounds the expansion of a node list, so a typo such as
// node[1-99999999] is an error rather than an allocation.
const maxNodes = 1 << 16

// ExpandNodeList expands a Slurm host list such as "node[01-04,07],login1"
// or "rack[1-2]-n[1-2]" into host names, in order, keeping zero padding.
func ExpandNodeList(list string) ([]string, error) {
	var hosts []string
	for _, item := range splitTopLevel(list) {
		if item == "" {
			return nil, fmt.Errorf("node list %q: empty host name", list)
		}
		expanded, err := expandHost(item, maxNodes-len(hosts))
		if err != nil {
			return nil, fmt.Errorf("node list %q: %w", list, err)
		}
		hosts = append(hosts, expanded...)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("node list %q is empty", list)
	}
	return hosts, nil
}

// splitTopLevel splits at commas outside brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandHost expands one host pattern with zero or more bracket groups.
func expandHost(pattern string, limit int) ([]string, error) {
	open := strings.IndexByte(pattern, '[')
	if open < 0 {
		if strings.ContainsAny(pattern, "]") {
			return nil, fmt.Errorf("unbalanced ']' in %q", pattern)
		}
		return []string{pattern}, nil
	}
	end := strings.IndexByte(pattern[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unbalanced '[' in %q", pattern)
	}
	end += open
	prefix, group, rest := pattern[:open], pattern[open+1:end], pattern[end+1:]
	tails, err := expandHost(rest, limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(group, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if lo == "" || hi == "" || errA != nil || errB != nil || a < 0 || b < a {
			return nil, fmt.Errorf("bad range %q in %q", r, pattern)
		}
		if (b-a+1)*len(tails) > limit-len(out) {
			return nil, fmt.Errorf("more than %d hosts", maxNodes)
		}
		for n := a; n <= b; n++ {
			num := fmt.Sprintf("%0*d", len(lo), n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}
