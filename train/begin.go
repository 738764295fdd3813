package train

import "context"

type beganKey struct{}

// WithBegan returns a context carrying began, which a run calls as it
// starts its first epoch, once setup (loading, partitioning, sampling
// ahead, pre-sampling GraphSAINT's normalisation) is over. A command
// interrupted before then has no epoch under way to finish and keep, and
// can stop at once. began may be called more than once (by each worker of
// a run) and from any goroutine.
func WithBegan(ctx context.Context, began func()) context.Context {
	return context.WithValue(ctx, beganKey{}, began)
}

// Began calls the function WithBegan put in ctx, if any.
func Began(ctx context.Context) {
	if f, ok := ctx.Value(beganKey{}).(func()); ok {
		f()
	}
}
