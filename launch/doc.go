// Package launch tells a graft worker where it sits in a job — its rank, the
// world size and rank 0's rendezvous address — and connects it to its peers.
//
// A worker takes these from command-line flags or from the environment
// variables the cluster tools users already run set:
//
//	graft       GRAFT_RANK, GRAFT_WORLD_SIZE, GRAFT_RENDEZVOUS (host:port)
//	torchrun    RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//	Open MPI    OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//	Slurm       SLURM_PROCID, SLURM_NTASKS; rendezvous on the first host of
//	            SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST) unless an
//	            address is given
//	Kubernetes  JOB_COMPLETION_INDEX (indexed Jobs); the world size from
//	            WORLD_SIZE or GRAFT_WORLD_SIZE
//
// The first convention in this order that is present supplies rank and size
// (torchrun inside a Slurm allocation wins over Slurm, as it should). Flags
// may repeat what the environment says but not contradict it: a mismatch is
// an error, since silently preferring one source is how jobs end up with two
// rank 3s. The job secret comes from a file (flag) or GRAFT_TOKEN.
// GRAFT_TRANSPORT=tcp keeps workers on one host on TCP instead of shared
// memory.
package launch
