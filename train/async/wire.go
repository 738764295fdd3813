package async

import (
	"encoding/binary"
	"fmt"

	"github.com/graft-gnn/graft/compress"
)

// Sites of the parameter server's messages: requests go to the servers,
// replies come back to the workers, and the servers' final counters to
// worker 0 once every worker is done.
const (
	RequestSite = "ps.request"
	ReplySite   = "ps.reply"
	FinalSite   = "ps.final"
)

// Kinds of request.
const (
	kindPush  byte = 1 // a gradient: apply it, then send the parameters
	kindPull  byte = 2 // send the parameters
	kindStats byte = 3 // send the shard's counters
	kindDone  byte = 4 // the worker has finished: no reply
	kindStop  byte = 5 // worker 0's patience ran out: every answer says stop from now; no reply
	kindAlive byte = 6 // worker 0 is evaluating, alive: no reply (a synchronous server tells the workers it holds to wait on)
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
	if len(b) < 9 || (len(b)-9)%4 != 0 || b[0] < kindPush || b[0] > kindAlive {
		return request{}, fmt.Errorf("async: malformed %d-byte request", len(b))
	}
	r := request{kind: b[0], version: int(binary.LittleEndian.Uint64(b[1:]))}
	r.grad = compress.ReadFloats(dst[:0], b[9:])
	return r, nil
}

// reply is a server's answer to a push or pull: its version after the
// request, the gradients it has received from all workers and how many make
// an epoch (0 until known), whether the run has all it needs (stop), and
// its parameter values. A reply that says wait is no answer: a synchronous
// server holds the worker's gradient while worker 0 evaluates, and the
// worker waits on for the answer.
type reply struct {
	version   int
	pushes    int64
	epochSize int64
	stop      bool
	wait      bool
	values    []float32
}

// The flag byte of a reply.
const (
	replyGo   byte = 0
	replyStop byte = 1
	replyWait byte = 2
)

const replyHeader = 25

func (r reply) encode() []byte {
	b := make([]byte, 0, replyHeader+4*len(r.values))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.version))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.pushes))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.epochSize))
	flag := replyGo
	switch {
	case r.wait:
		flag = replyWait
	case r.stop:
		flag = replyStop
	}
	return compress.AppendFloats(append(b, flag), r.values)
}

func decodeReply(b []byte, dst []float32) (reply, error) {
	if len(b) < replyHeader || (len(b)-replyHeader)%4 != 0 || b[24] > replyWait {
		return reply{}, fmt.Errorf("async: malformed %d-byte reply", len(b))
	}
	r := reply{version: int(binary.LittleEndian.Uint64(b)), pushes: int64(binary.LittleEndian.Uint64(b[8:])),
		epochSize: int64(binary.LittleEndian.Uint64(b[16:])), stop: b[24] == replyStop, wait: b[24] == replyWait}
	r.values = compress.ReadFloats(dst[:0], b[replyHeader:])
	return r, nil
}

// A server's counters, its answer to kindStats and its message at
// FinalSite, are little-endian uint64s:
// a tag, countersTag with the format's version in its low 16 bits, then
// Dropped, Updates, Pushes, EpochSize, BytesGrad and BytesParams, then the
// staleness histogram's counts, τ = 0 first. A decoder refuses a version
// it does not know; the tag's high bits ("GRAFTC") are no count a server
// could reach, so counters of the format before the tag, which began with
// Dropped, are refused too rather than read one word off.
const (
	countersTag     = 0x4752414654430000
	countersVersion = 4  // 2: servers take kindStop; 3: servers send their final counters (FinalSite); 4: kindAlive and replies that say wait
	countersHead    = 56 // the tag and the six counts
)

func encodeCounters(c Counters) []byte {
	b := binary.LittleEndian.AppendUint64(nil, countersTag|countersVersion)
	for _, n := range []int64{c.Dropped, c.Updates, c.Pushes, c.EpochSize, c.BytesGrad, c.BytesParams} {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	for _, n := range c.Staleness.counts {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	return b
}

func decodeCounters(b []byte) (Counters, error) {
	if len(b) >= 8 {
		tag := binary.LittleEndian.Uint64(b)
		if tag&^0xffff != countersTag {
			return Counters{}, fmt.Errorf("async: counters without this build's format tag; this build reads version %d (are all ranks the same graft?)", countersVersion)
		}
		if v := tag & 0xffff; v != countersVersion {
			return Counters{}, fmt.Errorf("async: counters of format version %d; this build reads version %d (are all ranks the same graft?)", v, countersVersion)
		}
	}
	if len(b) < countersHead || len(b)%8 != 0 {
		return Counters{}, fmt.Errorf("async: malformed %d-byte counters", len(b))
	}
	word := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
	c := Counters{Dropped: word(1), Updates: word(2), Pushes: word(3), EpochSize: word(4), BytesGrad: word(5), BytesParams: word(6)}
	if c.BytesGrad < 0 || c.BytesParams < 0 {
		return Counters{}, fmt.Errorf("async: malformed counters")
	}
	for i := countersHead / 8; 8*i < len(b); i++ {
		n := word(i)
		if n < 0 {
			return Counters{}, fmt.Errorf("async: malformed counters")
		}
		c.Staleness.addN(i-countersHead/8, n)
	}
	return c, nil
}
