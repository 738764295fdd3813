// Package commtest runs a test's ranks as separate communicators over a
// real TCP mesh on the loopback interface, as processes under graft launch
// would connect, for the trainers' tests over TCP.
package commtest
