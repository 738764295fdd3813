package freelist

import "sync"

// List is a bounded stack of reusable *T. The zero value is ready to use.
type List[T any] struct {
	mu   sync.Mutex
	free []*T
}

// maxFree bounds what a list keeps: more than the goroutines that ever use
// it at once is never needed.
const maxFree = 64

// Get returns a kept value, or a new zero one.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		x := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		return x
	}
	return new(T)
}

// Put keeps x for a later Get, unless the list is full.
func (l *List[T]) Put(x *T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) < maxFree {
		l.free = append(l.free, x)
	}
}
