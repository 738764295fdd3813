package dataset

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DataDirEnv is the environment variable naming the data directory when no
// --data-dir is given.
const DataDirEnv = "GRAFT_DATA"

// Entry is one named dataset of the registry.
type Entry struct {
	Name        string
	Description string
	// Files are the paths, relative to the data directory, the dataset is
	// read from.
	Files []string
	// Embedded reports whether a copy ships inside the binary, so the
	// dataset loads with no data directory.
	Embedded bool

	load func(e Entry, dataDir string) (*Dataset, error)
}

// Found reports whether every file of e exists under dataDir; if not it
// returns the first missing path.
func (e Entry) Found(dataDir string) (bool, string) {
	if dataDir == "" {
		return false, ""
	}
	for _, f := range e.Files {
		p := filepath.Join(dataDir, f)
		if _, err := os.Stat(p); err != nil {
			return false, p
		}
	}
	return true, ""
}

var registry = []Entry{
	{
		Name:        "cora",
		Description: "Cora citation graph (LINQS), Planetoid public split",
		Files:       []string{"linqs/cora/cora.content.gz", "linqs/cora/cora.cites", "planetoid/cora.public_split.tsv"},
		Embedded:    true,
		load:        loadPlanetoidLINQS,
	},
	{
		Name:        "citeseer",
		Description: "CiteSeer citation graph (LINQS, incl. 15 cites-only nodes), Planetoid public split",
		Files:       []string{"linqs/citeseer/citeseer.content.gz", "linqs/citeseer/citeseer.cites", "planetoid/citeseer.public_split.tsv"},
		load:        loadPlanetoidLINQS,
	},
	{
		Name:        "amazon-computers",
		Description: "Amazon Computers co-purchase graph (gnn-benchmark npz)",
		Files:       []string{"gnn-benchmark/amazon_electronics_computers.npz"},
		load:        loadNPZEntry,
	},
	{
		Name:        "amazon-photo",
		Description: "Amazon Photo co-purchase graph (gnn-benchmark npz)",
		Files:       []string{"gnn-benchmark/amazon_electronics_photo.npz"},
		load:        loadNPZEntry,
	},
	{
		Name:        "coauthor-cs",
		Description: "Coauthor CS co-authorship graph (gnn-benchmark npz)",
		Files:       []string{"gnn-benchmark/ms_academic_cs.npz"},
		load:        loadNPZEntry,
	},
	{
		Name:        "tolokers",
		Description: "Tolokers (heterophilous-graphs npz), 10 fixed 50/25/25 splits",
		Files:       []string{"heterophilous/tolokers.npz"},
		load:        loadNPZEntry,
	},
	{
		Name:        "cnr-2000",
		Description: "cnr-2000 web graph (LAW), structure only, for scale tests",
		Files:       []string{"webgraph/cnr-2000.arcs.tsv.gz"},
		load: func(e Entry, dataDir string) (*Dataset, error) {
			return loadEdgeListDataset(e.Name, filepath.Join(dataDir, e.Files[0]), 0)
		},
	},
}

// Registry lists the named datasets.
func Registry() []Entry { return append([]Entry(nil), registry...) }

func lookup(name string) (Entry, bool) {
	for _, e := range registry {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return Entry{}, false
}

// KnownNames lists the registry's names.
func KnownNames() []string {
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.Name
	}
	return names
}

// ResolveDataDir returns flagValue if set, else $GRAFT_DATA (possibly "").
func ResolveDataDir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(DataDirEnv)
}

// DataDirProblem says what is wrong with dir as a data directory, "does
// not exist", "is not a directory" or "cannot be read: " and why (a path
// through a file, a missing permission), or "" when it is one (or is "").
func DataDirProblem(dir string) string {
	if dir == "" {
		return ""
	}
	switch info, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) { // its path is dir, which the message gives
			err = pe.Err
		}
		return "cannot be read: " + err.Error()
	case !info.IsDir():
		return "is not a directory"
	}
	return ""
}

// Load returns the dataset called nameOrPath: a registry name (see
// Registry), read from files under dataDir, a generated graph (see
// SyntheticSpecs), or a path to a supported file or directory (an .npz, a
// LINQS .content file, an OGB directory, an edge list).
// An empty dataDir means $GRAFT_DATA. Cora falls back to the copy embedded
// in the binary when the data directory does not hold it.
func Load(nameOrPath, dataDir string) (*Dataset, error) { return load(nameOrPath, dataDir, MapAuto) }

// load is Load with a dataset directory's features mapped or read as
// mode says.
func load(nameOrPath, dataDir string, mode Mapping) (*Dataset, error) {
	d, err := read(nameOrPath, dataDir, mode)
	if err != nil {
		return nil, err
	}
	d.useHugePages()
	return d, nil
}

// read is load without the huge pages.
func read(nameOrPath, dataDir string, mode Mapping) (*Dataset, error) {
	if IsSynthetic(nameOrPath) {
		return loadSynthetic(nameOrPath)
	}
	dataDir = ResolveDataDir(dataDir)
	if e, ok := lookup(nameOrPath); ok {
		found, missing := e.Found(dataDir)
		switch {
		case found:
			return e.load(e, dataDir)
		case e.Embedded:
			return EmbeddedCora()
		case dataDir == "":
			return nil, fmt.Errorf("dataset %s is read from %s under a data directory; pass --data-dir DIR or set %s",
				e.Name, strings.Join(e.Files, ", "), DataDirEnv)
		case DataDirProblem(dataDir) != "":
			return nil, fmt.Errorf("dataset %s: the data directory %s %s (--data-dir or %s)", e.Name, dataDir, DataDirProblem(dataDir), DataDirEnv)
		default:
			return nil, fmt.Errorf("dataset %s: %s not found (data directory %s)", e.Name, missing, dataDir)
		}
	}
	if _, err := os.Stat(nameOrPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) && looksLikePath(nameOrPath) {
			return nil, fmt.Errorf("dataset %s: no such file or directory (%s)", nameOrPath, missingPathHint(nameOrPath))
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("unknown dataset %q: not a known name (%s) nor an existing path; "+
				"named datasets other than cora are read from a data directory given by --data-dir or %s",
				nameOrPath, strings.Join(KnownNames(), ", "), DataDirEnv)
		}
		return nil, err
	}
	return loadPath(nameOrPath, mode)
}

// LoadPath reads the dataset at path, choosing the reader by what is there:
// an OGB directory (raw/edge.csv.gz), a directory or file of LINQS data
// (<stem>.content[.gz] beside <stem>.cites[.gz], with an optional
// <stem>.public_split.tsv), an .npz archive (a dataset layout, or a
// scipy.sparse adjacency matrix), or else an edge list.
func LoadPath(path string) (*Dataset, error) { return loadPath(path, MapAuto) }

func loadPath(path string, mode Mapping) (*Dataset, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		if firstExisting(filepath.Join(path, "raw", "edge.csv.gz"), filepath.Join(path, "raw", "edge.csv")) != "" {
			return ReadOGB("", path)
		}
		if isNPYDir(path) {
			return ReadNPYDir(path, mode)
		}
		contents, _ := filepath.Glob(filepath.Join(path, "*.content*"))
		if len(contents) == 1 {
			return loadLINQSPath(contents[0])
		}
		return nil, fmt.Errorf("%s: directory is neither an OGB dataset (raw/edge.csv.gz), LINQS data (one *.content file) nor graft's .npy layout (%s)", path, npyDirGraph)
	}
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".npz"):
		return ReadNPZDataset("", path)
	case strings.HasSuffix(base, ".npy"):
		return nil, fmt.Errorf("%s: a single .npy array is not a dataset; give the .npz archive or directory holding it", path)
	case strings.HasSuffix(base, ".content"), strings.HasSuffix(base, ".content.gz"):
		return loadLINQSPath(path)
	}
	return loadEdgeListDataset("", path, 0)
}

func loadLINQSPath(contentPath string) (*Dataset, error) {
	stem := strings.TrimSuffix(strings.TrimSuffix(contentPath, ".gz"), ".content")
	cites := firstExisting(stem+".cites", stem+".cites.gz")
	if cites == "" {
		return nil, fmt.Errorf("%s: no %s.cites[.gz] beside it", contentPath, filepath.Base(stem))
	}
	return readLINQSWithSplit(filepath.Base(stem), contentPath, cites, firstExisting(stem+".public_split.tsv", stem+".public_split.tsv.gz"))
}

func firstExisting(paths ...string) string {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func readLINQSWithSplit(name, contentPath, citesPath, splitPath string) (*Dataset, error) {
	content, err := os.Open(contentPath)
	if err != nil {
		return nil, err
	}
	defer content.Close()
	cites, err := os.Open(citesPath)
	if err != nil {
		return nil, err
	}
	defer cites.Close()
	d, nodes, err := parseLINQS(name, contentPath, content, citesPath, cites)
	if err != nil || splitPath == "" {
		return d, err
	}
	f, err := os.Open(splitPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := applyPlanetoidSplit(d, nodes, splitPath, f); err != nil {
		return nil, err
	}
	return d, nil
}

// loadPlanetoidLINQS loads cora or citeseer from the data directory, with the
// Planetoid public split and, when present, the ten Geom-GCN splits.
func loadPlanetoidLINQS(e Entry, dataDir string) (*Dataset, error) {
	name := e.Name
	d, err := readLINQSWithSplit(name,
		filepath.Join(dataDir, e.Files[0]), filepath.Join(dataDir, e.Files[1]), filepath.Join(dataDir, e.Files[2]))
	if err != nil {
		return nil, err
	}
	for k := 0; k < 10; k++ {
		p := filepath.Join(dataDir, "planetoid/geom-gcn-splits", fmt.Sprintf("%s_split_0.6_0.2_%d.npz", name, k))
		if _, err := os.Stat(p); err != nil {
			break
		}
		s, err := ReadMaskSplit(p, -1, d)
		if err != nil {
			return nil, err
		}
		s.Name = fmt.Sprintf("geom-gcn:%d", k)
		d.Splits = append(d.Splits, s)
	}
	return d, nil
}

func loadNPZEntry(e Entry, dataDir string) (*Dataset, error) {
	return ReadNPZDataset(e.Name, filepath.Join(dataDir, e.Files[0]))
}

//go:embed embedded/cora.content.gz embedded/cora.cites.gz embedded/cora.public_split.tsv.gz
var embeddedCora embed.FS

// EmbeddedCora returns Cora from the copy compiled into the binary: the
// original LINQS files (gzipped) and the Planetoid public split, read by the
// same code as files on disk, so it equals Load("cora", dir) for any dir
// holding the staged data.
func EmbeddedCora() (*Dataset, error) {
	read := func(name string) []byte {
		b, err := embeddedCora.ReadFile("embedded/" + name)
		if err != nil {
			panic(err) // the embed directive guarantees these files
		}
		return b
	}
	d, nodes, err := parseLINQS("cora",
		"embedded cora.content.gz", bytes.NewReader(read("cora.content.gz")),
		"embedded cora.cites.gz", bytes.NewReader(read("cora.cites.gz")))
	if err != nil {
		return nil, err
	}
	if err := applyPlanetoidSplit(d, nodes, "embedded cora.public_split.tsv.gz", bytes.NewReader(read("cora.public_split.tsv.gz"))); err != nil {
		return nil, err
	}
	return d, nil
}

// looksLikePath reports whether a --dataset argument is meant as a path,
// not a name: it has a directory or a file extension.
func looksLikePath(s string) bool {
	return strings.ContainsRune(s, filepath.Separator) || strings.ContainsRune(s, '/') || filepath.Ext(s) != ""
}

// missingPathHint names the path made absolute and the nearest of its
// directories that exists, so that a mistyped directory, or a path
// relative to another working directory, shows.
func missingPathHint(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return err.Error()
	}
	dir := filepath.Dir(abs)
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	return fmt.Sprintf("%s: the nearest of its directories that exists is %s", abs, dir)
}
