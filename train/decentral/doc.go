// Package decentral trains graph neural networks with no server: every node
// of a networked system is an agent that holds its own data, its own loss and
// its own copy of the parameters, and talks only to its neighbours
// (Olshevskyi et al., arXiv 2412.06105).
//
// A Network runs one goroutine per node. The runtime owns the links, one
// buffered channel per direction of every edge, and talks to an agent only
// through commands and reports; an agent's state is reachable from its own
// goroutine alone, so agents can learn about each other only from messages.
// A round is one message from every agent to each neighbour; rounds are
// synchronous because every agent waits for one message (possibly marked
// lost) from each neighbour. Faults (message loss, cut links, nodes that
// leave and rejoin) are pure functions of the seed and the round, so every
// run is reproducible.
//
// The model is a graph-filter GNN (Model): each layer mixes K hops through a
// shift operator S, at K rounds per layer. The forward sweep sends
// activations; the backward sweep sends the terms a neighbour needs for its
// input gradient (node i sends S_ij·u_i to j). Each agent's share of the
// gradient sums, over agents, to the central gradient exactly. Agents then
// mix parameters and gradients with Metropolis–Hastings weights in one
// consensus round and take a local SGD, Adam or AMSGrad step. With piggybacking the backward
// sweep of sample b−1 rides on the forward sweep of sample b, so a mini-batch
// costs B·L·K + (L−1)·K + 1 rounds (LB + L for K = 1) instead of
// B·(2L−1)·K + 1.
//
// Three tasks from the paper are built in: node regression (Regression),
// wireless power allocation (Power) and link scheduling (Scheduling).
package decentral
