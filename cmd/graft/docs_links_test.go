package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The docs-links test checks every relative link of README.md and
// docs/*.md: the file it names exists, and its #anchor, if any, is a
// heading of that file by GitHub's rules (lowercased; letters, digits,
// '-' and '_' kept, spaces made '-', everything else dropped; a repeated
// heading's anchor gets -1, -2, …). Links in code blocks and code spans
// are not links and are not checked; links with a scheme (https:, mailto:)
// are not checked either.

var (
	// mdLinkTarget matches the "](target)" or "](target "title")" that
	// ends an inline link or image.
	mdLinkTarget = regexp.MustCompile(`\]\(\s*<?([^()\s<>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// mdCodeSpan matches an inline code span (one or two backticks).
	mdCodeSpan = regexp.MustCompile("``[^`]+``|`[^`]*`")
	// mdHeading matches an ATX heading line.
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// mdInlineLink matches a link or image inside a heading, for its text.
	mdInlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// urlScheme matches a target that starts with a scheme.
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// proseLines returns the lines of a markdown text with fenced code blocks
// blanked, so that line numbers stay those of the file.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(t, f) {
				fence = f
				lines[i] = ""
			}
		}
	}
	return lines
}

// headingSlug is the anchor GitHub gives a heading's text.
func headingSlug(heading string) string {
	heading = mdInlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors of a markdown text's headings.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := headingSlug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// docLink is a relative link found in a markdown file.
type docLink struct {
	line   int    // 1-based
	target string // as written
}

// relativeLinks returns the relative links of a markdown text outside code
// blocks and code spans.
func relativeLinks(text string) []docLink {
	lines := proseLines(text)
	// Code spans and links may wrap across lines: scan the prose as one
	// text and map offsets back to lines.
	prose := strings.Join(lines, "\n")
	prose = mdCodeSpan.ReplaceAllStringFunc(prose, func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, s)
	})
	var links []docLink
	for _, m := range mdLinkTarget.FindAllStringSubmatchIndex(prose, -1) {
		target := prose[m[2]:m[3]]
		if target == "" || urlScheme.MatchString(target) {
			continue
		}
		links = append(links, docLink{strings.Count(prose[:m[0]], "\n") + 1, target})
	}
	return links
}

// checkLink returns what is wrong with a link of the file at path (under
// root), or "".
func checkLink(root, path, target string, anchorsOf func(string) (map[string]bool, error)) string {
	file, anchor, _ := strings.Cut(target, "#")
	file, err := url.PathUnescape(file)
	if err != nil {
		return fmt.Sprintf("bad link %q: %v", target, err)
	}
	dest := path
	if file != "" {
		dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
		if rel, err := filepath.Rel(root, dest); err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Sprintf("link %q leaves the repository", target)
		}
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("link %q: no such file", target)
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	anchors, err := anchorsOf(dest)
	if err != nil {
		return fmt.Sprintf("link %q: %v", target, err)
	}
	if !anchors[anchor] {
		return fmt.Sprintf("link %q: no heading with anchor #%s", target, anchor)
	}
	return ""
}

// TestDocsLinks checks the relative links of README.md and docs/*.md.
func TestDocsLinks(t *testing.T) {
	root, files := docPages(t)
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = headingAnchors(string(text))
		return cache[path], nil
	}
	n := 0
	for _, path := range files {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, path)
		for _, l := range relativeLinks(string(text)) {
			n++
			if msg := checkLink(root, path, l.target, anchorsOf); msg != "" {
				t.Errorf("%s:%d: %s", name, l.line, msg)
			}
		}
	}
	t.Logf("%d relative links checked", n)
	if n < 100 {
		t.Fatalf("found %d relative links in README.md and docs/*.md; the extraction is broken", n)
	}
}

// TestDocsLinksExtraction checks the slugs and the link extraction on
// small cases.
func TestDocsLinksExtraction(t *testing.T) {
	slugs := map[string]string{
		"Subspace's default":                                                       "subspaces-default",
		"`--compress auto` over the 24 cells":                                      "--compress-auto-over-the-24-cells",
		"Prometheus: --metrics-sd":                                                 "prometheus---metrics-sd",
		"Time to accuracy on shaped links":                                         "time-to-accuracy-on-shaped-links",
		"Mixed precision: `--precision bf16`":                                      "mixed-precision---precision-bf16",
		"Fully distributed online training (`train/decentral`, `graft decentral`)": "fully-distributed-online-training-traindecentral-graft-decentral",
		"Using [links](x.md) and ×, – dashes":                                      "using-links-and---dashes",
		"snake_case and Ünïcode":                                                   "snake_case-and-ünïcode",
	}
	for h, want := range slugs {
		if got := headingSlug(h); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", h, got, want)
		}
	}
	text := "# Top\n\n## Top\n\nSee [a](a.md#top-1) and\n[b `c`](b.md), `[not](x.md)`,\n" +
		"![img](p.svg \"title\") and [web](https://example.com).\n\n```sh\n# not a heading [x](y.md)\n```\n"
	anchors := headingAnchors(text)
	if len(anchors) != 2 || !anchors["top"] || !anchors["top-1"] {
		t.Errorf("headingAnchors = %v, want top and top-1", anchors)
	}
	got := fmt.Sprint(relativeLinks(text))
	if want := "[{5 a.md#top-1} {6 b.md} {7 p.svg}]"; got != want {
		t.Errorf("relativeLinks = %s, want %s", got, want)
	}
}
