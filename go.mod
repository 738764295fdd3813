module github.com/graft-gnn/graft

go 1.26

require (
	github.com/maruel/safetensors v1.2.0
	golang.org/x/sys v0.38.0
)

require github.com/edsrzf/mmap-go v1.2.0 // indirect
