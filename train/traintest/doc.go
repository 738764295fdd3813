// Package traintest holds what the trainers' tests share: a small
// learnable graph with a split, and the small model configuration they
// train on it. It is imported only by tests.
package traintest
