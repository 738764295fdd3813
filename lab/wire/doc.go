//go:build linux

// Command wire is an experiment tool, not part of graft or its API: test
// infrastructure for scripts/netns-test.sh. It lives under lab/, beside the
// other experiment tools, so that the product's tree holds only what graft
// ships. It builds on Linux only (TUN devices); elsewhere the package is
// empty.
//
// It is a userspace network for graft's multi-host tests: one TUN device
// per host, joined by a switch that shapes every link the way
// `tc qdisc … netem rate R delay D loss L` would. scripts/netns-test.sh and
// scripts/tta.sh use it on kernels built without sch_netem (Firecracker's,
// for one), where tc can limit the rate but cannot delay packets; they
// change its loss, rate and queue through its standard input.
//
// Each host h has an uplink and a downlink of the given rate; a packet from
// h to g is serialised on h's uplink, travels for the delay, waits for and
// is serialised on g's downlink, and is then written to g's device. A link
// whose queue would hold more than -queue of backlog drops the packet (tail
// drop, as a full netem or tbf queue does), and -loss drops packets at
// random, seeded.
package main
