//go:build mpi

package comm

/*
#cgo pkg-config: ompi
#include <mpi.h>
#include <stdlib.h>

static int graft_init(int *provided) {
	int initialized = 0;
	MPI_Initialized(&initialized);
	if (initialized) { MPI_Query_thread(provided); return MPI_SUCCESS; }
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
}
static int graft_dup(MPI_Comm *c) { return MPI_Comm_dup(MPI_COMM_WORLD, c); }
static int graft_errors_return(MPI_Comm c) { return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); }
static int graft_sendrecv(MPI_Comm c, void *s, int sn, int to, void *r, int rn, int from, int tag) {
	return MPI_Sendrecv(s, sn, MPI_BYTE, to, tag, r, rn, MPI_BYTE, from, tag, c, MPI_STATUS_IGNORE);
}
static int graft_alltoall_int(MPI_Comm c, int *s, int *r) {
	return MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, c);
}
static int graft_alltoallv(MPI_Comm c, void *s, int *sc, int *sd, void *r, int *rc, int *rd) {
	return MPI_Alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, c);
}
static int graft_bcast(MPI_Comm c, void *p, int n, int root) { return MPI_Bcast(p, n, MPI_BYTE, root, c); }
static int graft_barrier(MPI_Comm c) { return MPI_Barrier(c); }
static int graft_rank(MPI_Comm c, int *r) { return MPI_Comm_rank(c, r); }
static int graft_size(MPI_Comm c, int *s) { return MPI_Comm_size(c, s); }
static int graft_free(MPI_Comm *c) { return MPI_Comm_free(c); }
static int graft_finalize(void) { return MPI_Finalize(); }
static int graft_isend(MPI_Comm c, void *p, int n, int to, MPI_Request *req) {
	return MPI_Isend(p, n, MPI_BYTE, to, 0, c, req);
}
static int graft_test(MPI_Request *req, int *done) { return MPI_Test(req, done, MPI_STATUS_IGNORE); }
static int graft_cancel(MPI_Request *req) { MPI_Cancel(req); return MPI_Request_free(req); }
static int graft_iprobe(MPI_Comm c, int *found, int *src, int *n) {
	MPI_Status st;
	int rc = MPI_Iprobe(MPI_ANY_SOURCE, 0, c, found, &st);
	if (rc != MPI_SUCCESS || !*found) return rc;
	*src = st.MPI_SOURCE;
	return MPI_Get_count(&st, MPI_BYTE, n);
}
static int graft_recv(MPI_Comm c, void *p, int n, int from) {
	return MPI_Recv(p, n, MPI_BYTE, from, 0, c, MPI_STATUS_IGNORE);
}
static int graft_error_string(int code, char *buf, int *len) { return MPI_Error_string(code, buf, len); }
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"
)

// MPI is a Communicator over Open MPI (build tag mpi). Rank and size come
// from the MPI launcher (mpirun, srun). AllReduce runs the same ring, in
// the same canonical order, as TCP and Group, so results are bit-identical
// across the three; messages are at most 4 MiB (one 64 MiB MPI call was
// measured 7× slower than sixteen 4 MiB ones).
type MPI struct {
	comm    C.MPI_Comm
	p2p     C.MPI_Comm // point-to-point messages, apart from the collectives
	p2pMu   sync.Mutex // one probe-and-receive at a time
	inbox   *inbox
	rank    int
	size    int
	stats   *Stats
	scratch []float32
	closed  bool
}

var mpiInit sync.Once

// NewMPI initialises MPI (MPI_THREAD_MULTIPLE) once per process and returns
// a communicator over a duplicate of MPI_COMM_WORLD. Errors are returned,
// not fatal.
func NewMPI() (*MPI, error) {
	var err error
	mpiInit.Do(func() {
		var provided C.int
		if rc := C.graft_init(&provided); rc != C.MPI_SUCCESS {
			err = mpiError("MPI_Init_thread", rc)
		} else if provided < C.MPI_THREAD_MULTIPLE {
			err = fmt.Errorf("comm: MPI provides thread level %d, graft needs MPI_THREAD_MULTIPLE", int(provided))
		}
	})
	if err != nil {
		return nil, err
	}
	m := &MPI{}
	if rc := C.graft_dup(&m.comm); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_dup", rc)
	}
	C.graft_errors_return(m.comm)
	if rc := C.graft_dup(&m.p2p); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_dup", rc)
	}
	C.graft_errors_return(m.p2p)
	var r, s C.int
	C.graft_rank(m.comm, &r)
	C.graft_size(m.comm, &s)
	m.rank, m.size, m.stats = int(r), int(s), newStats(int(s))
	m.inbox = newInbox(m.rank, m.size)
	return m, nil
}

func mpiError(call string, rc C.int) error {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING)
	var n C.int
	C.graft_error_string(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n)
	return fmt.Errorf("comm: %s: %s", call, buf[:n])
}

func (m *MPI) Rank() int     { return m.rank }
func (m *MPI) Size() int     { return m.size }
func (m *MPI) Stats() *Stats { return m.stats }

// Close frees the communicator and finalises MPI; no MPI call may follow.
func (m *MPI) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	C.graft_free(&m.comm)
	C.graft_free(&m.p2p)
	if rc := C.graft_finalize(); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Finalize", rc)
	}
	return nil
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (m *MPI) AllReduce(site string, data []float32) error {
	start := time.Now()
	n, size, r := len(data), m.size, m.rank
	sent, recvd := make([]int64, size), make([]int64, size)
	if size > 1 && n > 0 {
		if m.scratch == nil {
			m.scratch = make([]float32, ringChunkValues)
		}
		left, right := (r+size-1)%size, (r+1)%size
		mod := func(k int) int { return ((k % size) + size) % size }
		for lo := 0; lo < n; {
			hi := ringRound(lo, n, size)
			for s := 0; s < size-1; s++ { // reduce-scatter
				slo, shi := ringChunk(lo, hi, mod(r-s), size)
				rlo, rhi := ringChunk(lo, hi, mod(r-s-1), size)
				sb, rb := float32Bytes(data[slo:shi]), float32Bytes(m.scratch[:rhi-rlo])
				if rc := C.graft_sendrecv(m.comm, ptr(sb), C.int(len(sb)), C.int(right), ptr(rb), C.int(len(rb)), C.int(left), 1); rc != C.MPI_SUCCESS {
					return mpiError("MPI_Sendrecv", rc)
				}
				acc := data[rlo:rhi]
				for i, v := range m.scratch[:rhi-rlo] {
					acc[i] = v + acc[i]
				}
				sent[right] += int64(len(sb))
				recvd[left] += int64(len(rb))
			}
			for s := 0; s < size-1; s++ { // all-gather
				slo, shi := ringChunk(lo, hi, mod(r+1-s), size)
				rlo, rhi := ringChunk(lo, hi, mod(r-s), size)
				sb, rb := float32Bytes(data[slo:shi]), float32Bytes(data[rlo:rhi])
				if rc := C.graft_sendrecv(m.comm, ptr(sb), C.int(len(sb)), C.int(right), ptr(rb), C.int(len(rb)), C.int(left), 2); rc != C.MPI_SUCCESS {
					return mpiError("MPI_Sendrecv", rc)
				}
				sent[right] += int64(len(sb))
				recvd[left] += int64(len(rb))
			}
			lo = hi
		}
	}
	m.stats.record(site, r, sent, recvd, time.Since(start))
	return nil
}

func (m *MPI) AllToAll(site string, send, recv [][]byte) error {
	size := m.size
	if len(send) != size || len(recv) != size {
		return fmt.Errorf("comm: AllToAll(%s): %d send and %d receive buffers for %d ranks", site, len(send), len(recv), size)
	}
	start := time.Now()
	counts := make([]C.int, 4*size) // send counts, send displacements, receive counts, receive displacements
	sc, sd, rc, rd := counts[:size], counts[size:2*size], counts[2*size:3*size], counts[3*size:]
	var total int
	for p, b := range send {
		if len(b) > math.MaxInt32 || total+len(b) > math.MaxInt32 {
			return fmt.Errorf("comm: AllToAll(%s): more than 2 GiB for MPI", site)
		}
		sc[p], sd[p] = C.int(len(b)), C.int(total)
		total += len(b)
	}
	if code := C.graft_alltoall_int(m.comm, &sc[0], &rc[0]); code != C.MPI_SUCCESS {
		return mpiError("MPI_Alltoall", code)
	}
	sbuf := make([]byte, 0, total)
	for _, b := range send {
		sbuf = append(sbuf, b...)
	}
	var rtotal int
	for p := range size {
		rd[p] = C.int(rtotal)
		rtotal += int(rc[p])
	}
	rbuf := make([]byte, rtotal)
	if code := C.graft_alltoallv(m.comm, ptr(sbuf), &sc[0], &sd[0], ptr(rbuf), &rc[0], &rd[0]); code != C.MPI_SUCCESS {
		return mpiError("MPI_Alltoallv", code)
	}
	sent, recvd := make([]int64, size), make([]int64, size)
	for p := range size {
		recv[p] = append(recv[p][:0], rbuf[rd[p]:int(rd[p])+int(rc[p])]...)
		sent[p], recvd[p] = int64(sc[p]), int64(rc[p])
	}
	m.stats.record(site, m.rank, sent, recvd, time.Since(start))
	return nil
}

func (m *MPI) Broadcast(site string, root int, data []byte) error {
	if err := checkRoot(root, m.size); err != nil {
		return err
	}
	start := time.Now()
	for off := 0; off < len(data); off += maxDataPayload {
		piece := data[off:min(len(data), off+maxDataPayload)]
		if rc := C.graft_bcast(m.comm, ptr(piece), C.int(len(piece)), C.int(root)); rc != C.MPI_SUCCESS {
			return mpiError("MPI_Bcast", rc)
		}
	}
	sent, recvd := make([]int64, m.size), make([]int64, m.size)
	if m.rank == root {
		for p := range sent {
			sent[p] = int64(len(data))
		}
	} else {
		recvd[root] = int64(len(data))
	}
	m.stats.record(site, m.rank, sent, recvd, time.Since(start))
	return nil
}

func (m *MPI) Barrier(site string) error {
	start := time.Now()
	if rc := C.graft_barrier(m.comm); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Barrier", rc)
	}
	m.stats.record(site, m.rank, nil, nil, time.Since(start))
	return nil
}

// mpiSendTimeout bounds a Send: MPI delivers a large message only once
// the receiver asks for it, and a receiver that never calls Recv must not
// hold the sender forever.
const mpiSendTimeout = 30 * time.Minute

// Send copies msg, prefixed with its site, into C memory (MPI keeps the
// buffer until the send completes, which cgo forbids for Go memory) and
// polls the non-blocking send to completion.
func (m *MPI) Send(site string, to int, msg []byte) error {
	if err := checkPeer("Send", site, to, m.size, false); err != nil {
		return err
	}
	if err := checkSite(site); err != nil {
		return err
	}
	data := encodeMessage(site, msg)
	if len(data) > math.MaxInt32 {
		return fmt.Errorf("comm: Send(%s): a %d-byte message is more than MPI's 2 GiB", site, len(msg))
	}
	start := time.Now()
	buf := C.malloc(C.size_t(max(len(data), 1)))
	copy(unsafe.Slice((*byte)(buf), len(data)), data)
	var req C.MPI_Request
	if rc := C.graft_isend(m.p2p, buf, C.int(len(data)), C.int(to), &req); rc != C.MPI_SUCCESS {
		C.free(buf)
		return mpiError("MPI_Isend", rc)
	}
	for wait := time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		var done C.int
		if rc := C.graft_test(&req, &done); rc != C.MPI_SUCCESS {
			return mpiError("MPI_Test", rc) // buf may still be in use: leaked
		}
		if done != 0 {
			break
		}
		if time.Since(start) > mpiSendTimeout {
			C.graft_cancel(&req)
			return &PeerError{Rank: to, Err: fmt.Errorf("did not take a message for %s within %v", site, mpiSendTimeout)}
		}
		m.drain() // a peer sending to this rank at the same time must not wait for us
		time.Sleep(wait)
	}
	C.free(buf)
	m.stats.recordPeer(site, m.rank, to, int64(len(msg)), 0, time.Since(start))
	return nil
}

// drain moves every message that has arrived into the inbox.
func (m *MPI) drain() error {
	m.p2pMu.Lock()
	defer m.p2pMu.Unlock()
	for {
		var found, src, n C.int
		if rc := C.graft_iprobe(m.p2p, &found, &src, &n); rc != C.MPI_SUCCESS {
			return mpiError("MPI_Iprobe", rc)
		}
		if found == 0 {
			return nil
		}
		buf := make([]byte, int(n))
		if rc := C.graft_recv(m.p2p, ptr(buf), n, src); rc != C.MPI_SUCCESS {
			return mpiError("MPI_Recv", rc)
		}
		site, msg, err := decodeMessage(buf)
		if err != nil {
			return &PeerError{Rank: int(src), Err: err}
		}
		m.inbox.put(int(src), site, msg)
	}
}

// Recv polls MPI for messages until one for site from the rank asked for
// has arrived, or the deadline passes.
func (m *MPI) Recv(site string, from int, deadline time.Time) (int, []byte, error) {
	if err := checkPeer("Recv", site, from, m.size, true); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	for wait := time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		if err := m.drain(); err != nil {
			return 0, nil, err
		}
		msg, wake, err := m.inbox.take(site, from)
		if err != nil {
			return 0, nil, err
		}
		if wake == nil {
			m.stats.recordPeer(site, m.rank, msg.from, 0, int64(len(msg.data)), time.Since(start))
			return msg.from, msg.data, nil
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return 0, nil, deadlineError(site, from, deadline)
		}
		time.Sleep(wait)
	}
}

var _ Communicator = (*MPI)(nil)
