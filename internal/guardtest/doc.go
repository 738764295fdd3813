// Package guardtest gives tests memory that ends where an inaccessible page
// begins, so that a kernel reading or writing past the end of a slice
// faults instead of passing by luck.
package guardtest
