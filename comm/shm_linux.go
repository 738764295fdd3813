package comm

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// shmDir is where segments are created: /dev/shm, or the temporary
// directory where there is none.
func shmDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// hostIdentity names the memory this process can share: the kernel's boot
// id and the filesystem of shmDir. Two processes with the same identity
// can map each other's segments, whatever their host names or network
// namespaces; "" when it cannot be told.
func hostIdentity() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	dir := shmDir()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%x:%x:%s", bytes.TrimSpace(boot), st.Dev, st.Ino, dir)
}

const shmPrefix = "graft-"

// createSegment creates and maps a segment with two rings of ringSize
// bytes in a new file only this user can open, under a random name. The
// caller unlinks the file once the peer has mapped it (or failed to).
func createSegment(ringSize int) (mem []byte, path string, token []byte, err error) {
	var name [16]byte
	token = make([]byte, shmTokenLen)
	if _, err := rand.Read(name[:]); err != nil {
		return nil, "", nil, err
	}
	if _, err := rand.Read(token); err != nil {
		return nil, "", nil, err
	}
	path = filepath.Join(shmDir(), shmPrefix+hex.EncodeToString(name[:]))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, "", nil, err
	}
	defer f.Close()
	size := shmSegmentSize(ringSize)
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, "", nil, err
	}
	mem, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, "", nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	copy(mem, shmMagic)
	binary.NativeEndian.PutUint64(mem[8:], uint64(ringSize))
	copy(mem[16:], token)
	return mem, path, token, nil
}

// openSegment maps the peer's segment at path, which must be a file of
// this user's, mode 0600, in this process's shmDir, holding token; it
// returns the mapping and the ring size. The file is removed once mapped:
// nothing else can attach after that.
func openSegment(path string, token []byte) ([]byte, int, error) {
	if filepath.Dir(path) != shmDir() || !strings.HasPrefix(filepath.Base(path), shmPrefix) {
		return nil, 0, fmt.Errorf("segment %q is not in %s", path, shmDir())
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	defer os.Remove(path)
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, 0, err
	}
	if st.Uid != uint32(os.Getuid()) || st.Mode&0o777 != 0o600 || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, 0, fmt.Errorf("segment %s: owner %d, mode %o; want this user's, 0600", path, st.Uid, st.Mode)
	}
	if st.Size < shmHeader || st.Size > 1<<32 {
		return nil, 0, fmt.Errorf("segment %s: %d bytes", path, st.Size)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, 0, fmt.Errorf("mapping %s: %w", path, err)
	}
	ringSize := int(binary.NativeEndian.Uint64(mem[8:]))
	if string(mem[:len(shmMagic)]) != shmMagic || !bytes.Equal(mem[16:16+shmTokenLen], token) ||
		ringSize <= 0 || ringSize&(ringSize-1) != 0 || shmSegmentSize(ringSize) != len(mem) {
		syscall.Munmap(mem)
		return nil, 0, fmt.Errorf("segment %s is not the one the peer announced", path)
	}
	return mem, ringSize, nil
}

func removeSegment(path string) { os.Remove(path) }

func unmapSegment(mem []byte) func() error {
	return func() error { return syscall.Munmap(mem) }
}

// readRemote copies len(dst) bytes at addr in process pid into dst.
func readRemote(pid int, dst []byte, addr uint64) error {
	for len(dst) > 0 {
		local := []unix.Iovec{{Base: &dst[0]}}
		local[0].SetLen(len(dst))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(dst)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil {
			return err
		}
		if n <= 0 {
			return fmt.Errorf("read %d of %d bytes", n, len(dst))
		}
		dst, addr = dst[n:], addr+uint64(n)
	}
	return nil
}
