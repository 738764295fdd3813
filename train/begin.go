package train

import "context"

type beganKey struct{}

// WithBegan returns a context carrying began, which a run calls as it
// starts its first epoch, once setup (loading, partitioning, sampling
// ahead, pre-sampling GraphSAINT's normalisation) is over. A command
// interrupted before then has no epoch under way to finish and keep, and
// can stop at once. began is given the number of the epoch that starts:
// 1, or a resumed run's next. It may be called more than once (by each
// worker of a run) and from any goroutine.
func WithBegan(ctx context.Context, began func(epoch int)) context.Context {
	return context.WithValue(ctx, beganKey{}, began)
}

// Began calls the function WithBegan put in ctx, if any, with the number
// of the epoch that starts.
func Began(ctx context.Context, epoch int) {
	if f, ok := ctx.Value(beganKey{}).(func(int)); ok {
		f(epoch)
	}
}
