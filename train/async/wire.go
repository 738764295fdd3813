package async

import (
	"encoding/binary"
	"fmt"

	"github.com/graft-gnn/graft/compress"
)

// Sites of the parameter server's messages: requests go to the servers,
// replies come back to the workers.
const (
	RequestSite = "ps.request"
	ReplySite   = "ps.reply"
)

// Kinds of request.
const (
	kindPush  byte = 1 // a gradient: apply it, then send the parameters
	kindPull  byte = 2 // send the parameters
	kindStats byte = 3 // send the shard's counters
	kindDone  byte = 4 // the worker has finished: no reply
)

// request is a worker's message to a server: kind, the version the
// gradient was computed from (in a pull: the worker's batches per epoch),
// and the gradient.
type request struct {
	kind    byte
	version int
	grad    []float32
}

func (r request) encode() []byte {
	b := make([]byte, 0, 9+4*len(r.grad))
	b = append(b, r.kind)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.version))
	return compress.AppendFloats(b, r.grad)
}

func decodeRequest(b []byte, dst []float32) (request, error) {
	if len(b) < 9 || (len(b)-9)%4 != 0 || b[0] < kindPush || b[0] > kindDone {
		return request{}, fmt.Errorf("async: malformed %d-byte request", len(b))
	}
	r := request{kind: b[0], version: int(binary.LittleEndian.Uint64(b[1:]))}
	r.grad = compress.ReadFloats(dst[:0], b[9:])
	return r, nil
}

// reply is a server's answer to a push or pull: its version after the
// request, the gradients it has received from all workers and how many make
// an epoch (0 until known), whether the run has all it needs (stop), and
// its parameter values.
type reply struct {
	version   int
	pushes    int64
	epochSize int64
	stop      bool
	values    []float32
}

const replyHeader = 25

func (r reply) encode() []byte {
	b := make([]byte, 0, replyHeader+4*len(r.values))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.version))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.pushes))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.epochSize))
	stop := byte(0)
	if r.stop {
		stop = 1
	}
	return compress.AppendFloats(append(b, stop), r.values)
}

func decodeReply(b []byte, dst []float32) (reply, error) {
	if len(b) < replyHeader || (len(b)-replyHeader)%4 != 0 || b[24] > 1 {
		return reply{}, fmt.Errorf("async: malformed %d-byte reply", len(b))
	}
	r := reply{version: int(binary.LittleEndian.Uint64(b)), pushes: int64(binary.LittleEndian.Uint64(b[8:])),
		epochSize: int64(binary.LittleEndian.Uint64(b[16:])), stop: b[24] == 1}
	r.values = compress.ReadFloats(dst[:0], b[replyHeader:])
	return r, nil
}

func encodeCounters(c Counters) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(c.Dropped))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.Updates))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.Pushes))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.EpochSize))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.BytesGrad))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.BytesParams))
	for _, n := range c.Staleness.counts {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	return b
}

func decodeCounters(b []byte) (Counters, error) {
	const head = 48
	if len(b) < head || len(b)%8 != 0 {
		return Counters{}, fmt.Errorf("async: malformed %d-byte counters", len(b))
	}
	c := Counters{Dropped: int64(binary.LittleEndian.Uint64(b)), Updates: int64(binary.LittleEndian.Uint64(b[8:])),
		Pushes: int64(binary.LittleEndian.Uint64(b[16:])), EpochSize: int64(binary.LittleEndian.Uint64(b[24:])),
		BytesGrad: int64(binary.LittleEndian.Uint64(b[32:])), BytesParams: int64(binary.LittleEndian.Uint64(b[40:]))}
	if c.BytesGrad < 0 || c.BytesParams < 0 {
		return Counters{}, fmt.Errorf("async: malformed counters")
	}
	for tau := 0; head+8*tau < len(b); tau++ {
		n := int64(binary.LittleEndian.Uint64(b[head+8*tau:]))
		if n < 0 {
			return Counters{}, fmt.Errorf("async: malformed counters")
		}
		c.Staleness.addN(tau, n)
	}
	return c, nil
}
