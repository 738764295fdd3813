package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/graft-gnn/graft/internal/freelist"
)

// Task is a loop body. Run processes the half-open range [lo, hi) of chunk
// indices or item indices, depending on the caller's convention.
type Task interface {
	Run(lo, hi int)
}

// job is one parallel call: items [0, n) cut at bounds, handed out chunk by
// chunk through an atomic counter shared by the caller and recruited workers.
type job struct {
	task   Task
	bounds []int // chunk c covers [bounds[c], bounds[c+1])
	next   atomic.Int64
	acks   chan struct{} // one receive per recruited worker
	own    []int         // scratch bounds for For; reused across calls
}

var (
	startOnce sync.Once
	jobs      chan *job
	poolSize  int
	jobPool   freelist.List[job] // reused across GCs: a call allocates nothing
)

func getJob() *job {
	j := jobPool.Get()
	if j.acks == nil {
		j.acks = make(chan struct{}, 256)
	}
	return j
}

func start() {
	poolSize = runtime.GOMAXPROCS(0)
	if n := runtime.NumCPU(); n > poolSize {
		poolSize = n
	}
	if poolSize > 256 {
		poolSize = 256
	}
	jobs = make(chan *job) // unbuffered: a send succeeds only to a worker parked in receive
	for i := 0; i < poolSize-1; i++ {
		go worker()
	}
}

func worker() {
	for j := range jobs {
		j.drain()
		j.acks <- struct{}{}
	}
}

func (j *job) drain() {
	chunks := int64(len(j.bounds) - 1)
	for {
		c := j.next.Add(1) - 1
		if c >= chunks {
			return
		}
		j.task.Run(j.bounds[c], j.bounds[c+1])
	}
}

// Workers is the number of goroutines a parallel call may use, including the
// caller: GOMAXPROCS at the time of the call.
func Workers() int { return runtime.GOMAXPROCS(0) }

// For runs t over [0, n) in contiguous chunks of at least grain items, on up to
// Workers() goroutines. It returns when every chunk has run.
func For(n, grain int, t Task) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	w := Workers()
	chunks := min(n/grain, 4*w) // a few chunks per worker smooth out uneven speed
	if chunks <= 1 || w == 1 {
		t.Run(0, n)
		return
	}
	j := getJob()
	j.own = j.own[:0]
	for c := 0; c <= chunks; c++ {
		j.own = append(j.own, int(int64(n)*int64(c)/int64(chunks)))
	}
	run(j, t, j.own, w)
	jobPool.Put(j)
}

// ForBounds runs t once per chunk [bounds[c], bounds[c+1]), for callers that
// balance work themselves (for example by nonzeros rather than rows).
func ForBounds(bounds []int, t Task) {
	if len(bounds) < 2 {
		return
	}
	w := Workers()
	if len(bounds) == 2 || w == 1 {
		for c := 0; c+1 < len(bounds); c++ {
			t.Run(bounds[c], bounds[c+1])
		}
		return
	}
	j := getJob()
	run(j, t, bounds, w)
	jobPool.Put(j)
}

func run(j *job, t Task, bounds []int, w int) {
	startOnce.Do(start)
	j.task = t
	j.bounds = bounds
	j.next.Store(0)
	chunks := int64(len(bounds) - 1)
	recruited := 0
	maxRecruit := min(w-1, poolSize-1, int(chunks)-1)
	for {
		// Recruit idle workers before every chunk: a worker that just finished
		// the previous call may not be parked yet on the first try.
		for recruited < maxRecruit {
			select {
			case jobs <- j:
				recruited++
				continue
			default:
			}
			break
		}
		c := j.next.Add(1) - 1
		if c >= chunks {
			break
		}
		t.Run(bounds[c], bounds[c+1])
	}
	for ; recruited > 0; recruited-- {
		<-j.acks
	}
	j.task = nil
	j.bounds = nil
}
