//go:build mpi

package comm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// Run under MPI: go test -tags mpi -c -o comm_mpi.test ./comm &&
// mpirun --allow-run-as-root --oversubscribe -np 2 ./comm_mpi.test -test.run MPI
func TestMPICollectives(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("not started by mpirun")
	}
	m, err := NewMPI()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, size := m.Rank(), m.Size()
	// Every rank builds every rank's input, so each can check the sum.
	for _, n := range []int{1, 1001, 2*ringChunkValues*size + 3} {
		inputs := randomInputs(size, n, uint64(n))
		want := referenceSum(inputs)
		data := append([]float32(nil), inputs[r]...)
		if err := m.AllReduce("g", data); err != nil {
			t.Fatal(err)
		}
		for i := range data {
			if data[i] != want[i] {
				t.Fatalf("n %d: [%d] = %v, want %v bit for bit (the TCP and in-process sum)", n, i, data[i], want[i])
			}
		}
	}
	send, recv := make([][]byte, size), make([][]byte, size)
	for p := range size {
		send[p] = bytes.Repeat([]byte{byte(r*16 + p)}, r+p*maxDataPayload/3)
	}
	if err := m.AllToAll("x", send, recv); err != nil {
		t.Fatal(err)
	}
	for p := range size {
		if want := bytes.Repeat([]byte{byte(p*16 + r)}, p+r*maxDataPayload/3); !bytes.Equal(recv[p], want) {
			t.Fatalf("all-to-all from %d: %d bytes, want %d", p, len(recv[p]), len(want))
		}
	}
	big := make([]byte, maxDataPayload+5)
	if r == size-1 {
		copy(big, "hello")
	}
	if err := m.Broadcast("b", size-1, big); err != nil {
		t.Fatal(err)
	}
	if string(big[:5]) != "hello" {
		t.Fatalf("broadcast got %q", big[:5])
	}
	mpiP2P(t, m)
	if err := m.Barrier("end"); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rank %d of %d: MPI collectives and point-to-point ok\n", r, size)
}

// mpirun --allow-run-as-root --oversubscribe -np 2 ./comm_mpi.test -test.run XXX -test.bench MPI
func BenchmarkMPIAllReduce64MiB(b *testing.B) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		b.Skip("not started by mpirun")
	}
	m, err := NewMPI()
	if err != nil {
		b.Fatal(err)
	}
	data := make([]float32, 16<<20)
	b.SetBytes(int64(4 * len(data)))
	// Every rank must run the same number of iterations: rank 0's b.N
	// decides, broadcast to the others.
	n := []byte{byte(min(b.N, 255))}
	if err := m.Broadcast("n", 0, n); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range int(n[0]) {
		if err := m.AllReduce("g", data); err != nil {
			b.Fatal(err)
		}
	}
}

// mpiP2P checks point-to-point messages: every rank sends every other a
// run of messages (empty, small, one over 4 MiB) and receives them in order
// from any rank; a receive with nobody sending ends at its deadline.
func mpiP2P(t *testing.T, m *MPI) {
	r, size := m.Rank(), m.Size()
	const count = 10
	for p := range size {
		if p == r {
			continue
		}
		for i := range count {
			if err := m.Send("p2p", p, p2pPayload(r, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	next := make([]int, size)
	for range (size - 1) * count {
		from, msg, err := m.Recv("p2p", AnyRank, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if want := p2pPayload(from, next[from]); !bytes.Equal(msg, want) {
			t.Fatalf("message %d from rank %d: %d bytes, want %d", next[from], from, len(msg), len(want))
		}
		next[from]++
	}
	start := time.Now()
	if _, _, err := m.Recv("quiet", AnyRank, start.Add(100*time.Millisecond)); !errors.Is(err, ErrDeadline) {
		t.Fatalf("Recv with nobody sending: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Recv deadline of 100ms returned after %v", d)
	}
}
