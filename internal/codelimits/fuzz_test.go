package codelimits

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fuzzTargets lists every fuzz target of the module as "./pkg FuzzName".
func fuzzTargets(t *testing.T, root string) []string {
	var targets []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Fuzz") {
				targets = append(targets, "./"+filepath.ToSlash(rel)+" "+fd.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(targets)
	return targets
}

// CI fuzzes every fuzz target of the module, each with a count budget and a
// counted minimisation.
func TestCIFuzzesEveryTargetWithCountBudgets(t *testing.T) {
	root := moduleRoot(t)
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^[^#\n]*scripts/fuzz\.sh`).Match(ci) {
		t.Fatal(".ci/run does not run scripts/fuzz.sh")
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "fuzz.sh"), "-n")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/fuzz.sh -n: %v", err)
	}
	line := regexp.MustCompile(`^go test -run=\^\$ -fuzz=\^(Fuzz\w+)\$ -fuzztime=[1-9][0-9]*x -fuzzminimizetime=[1-9][0-9]*x (\./\S+)$`)
	var fuzzed []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("scripts/fuzz.sh would run %q, not one target with count budgets", l)
			continue
		}
		fuzzed = append(fuzzed, m[2]+" "+m[1])
	}
	slices.Sort(fuzzed)
	if want := fuzzTargets(t, root); !slices.Equal(fuzzed, want) {
		t.Errorf("scripts/fuzz.sh fuzzes\n%s\nbut the module's fuzz targets are\n%s", lines(fuzzed), lines(want))
	}
}

func lines(xs []string) string {
	var b bytes.Buffer
	for _, x := range xs {
		fmt.Fprintln(&b, "  "+x)
	}
	return b.String()
}
