package codelimits

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	maxFileLines = 800
	maxFuncLines = 100
	// maxLongFuncs is how many functions may be over maxFuncLines: the
	// algorithms that read better whole (a refinement pass, a matching,
	// a ring all-reduce, a layer's backward pass).
	maxLongFuncs = 5
)

// length is a file's or a function's length in lines.
type length struct {
	name  string
	lines int
}

func (l length) String() string { return fmt.Sprintf("%s: %d lines", l.name, l.lines) }

func TestFileAndFunctionLengths(t *testing.T) {
	root := moduleRoot(t)
	files, funcs := measure(t, root)
	if len(files) == 0 {
		t.Fatalf("no Go files under %s", root)
	}
	longFiles, longFuncs := over(files, maxFileLines), over(funcs, maxFuncLines)
	if len(longFiles) > 0 {
		t.Errorf("non-test Go files over %d lines (split them along a seam):\n%s", maxFileLines, list(longFiles))
	}
	if len(longFuncs) > maxLongFuncs {
		t.Errorf("%d functions are over %d lines, at most %d may be (split the ones that are not one algorithm):\n%s",
			len(longFuncs), maxFuncLines, maxLongFuncs, list(longFuncs))
	}
	if !t.Failed() {
		t.Logf("%d files, %d functions; functions over %d lines:\n%s", len(files), len(funcs), maxFuncLines, list(longFuncs))
	}
}

// over returns the lengths over limit, longest first.
func over(ls []length, limit int) []length {
	var out []length
	for _, l := range ls {
		if l.lines > limit {
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(a, b length) int { return b.lines - a.lines })
	return out
}

// measure returns the length of every non-test Go file of the module at
// root and of every function declared in them, named by their path
// relative to root. Build tags do not matter: every file counts.
func measure(t *testing.T, root string) (files, funcs []length) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		files = append(files, length{rel, lineCount(src)})
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok {
				lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				funcs = append(funcs, length{rel + " " + funcName(fd), lines})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, funcs
}

// skipDir reports whether the go command ignores the directory (hidden,
// "_" prefixed, testdata) or it is vendored code or another module.
func skipDir(path, name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

func lineCount(src []byte) int {
	n := bytes.Count(src, []byte{'\n'})
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// funcName is fd's name, with its receiver type for a method: "(*T).M".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		typ, star = s.X, "*"
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	name := "?"
	if id, ok := typ.(*ast.Ident); ok {
		name = id.Name
	}
	if star != "" {
		return "(*" + name + ")." + fd.Name.Name
	}
	return name + "." + fd.Name.Name
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func list(ls []length) string {
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "\t%v\n", l)
	}
	return b.String()
}
