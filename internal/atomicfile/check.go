package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckWritable reports whether a file can be written at path, so that a
// long run can refuse an output it would fail to write at the end. An
// existing file must be a regular file open for writing; a new one needs
// an existing directory that accepts files, which is tried by creating and
// removing a temporary file (TempPrefix) in it. Nothing is left behind and
// an existing file is not changed. Errors name path.
func CheckWritable(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("%s cannot be overwritten: %w", path, underlying(err))
		}
		return f.Close()
	} else if !missing(err) {
		return fmt.Errorf("%s: %w", path, underlying(err))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case missing(err):
		return fmt.Errorf("%s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", path, underlying(err))
	case !fi.IsDir():
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	if err := probe(dir); err != nil {
		return fmt.Errorf("%s: cannot create files in %s: %w", path, dir, err)
	}
	return nil
}

// CheckWritableDir reports whether files can be written in dir: dir itself
// if it exists, otherwise the nearest existing directory above it, in
// which dir would be created. Like CheckWritable it leaves nothing behind:
// a missing dir is not created.
func CheckWritableDir(dir string) error {
	for d := filepath.Clean(dir); ; {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s: %s is not a directory", dir, d)
		case err == nil:
			if err := probe(d); err != nil {
				return fmt.Errorf("%s: cannot create files in %s: %w", dir, d, err)
			}
			return nil
		case !missing(err):
			return fmt.Errorf("%s: %w", dir, underlying(err))
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("%s: no existing directory above it", dir)
		}
		d = parent
	}
}

// missing reports whether a Stat error says that nothing is at the path:
// it does not exist, or a file stands where a directory above it should.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// probe creates and removes a temporary file in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, TempPrefix+"probe-*")
	if err != nil {
		return underlying(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// underlying drops the *PathError's operation and path, which the callers'
// messages already name.
func underlying(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
