package namelsm

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang-14 -target bpfel -type event -type key -type value -type config namelsm bpf/namelsm.bpf.c -- -O2 -g -Wall -Ibpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang-14 -target bpfel -output-suffix _test -type testctx -type value matchtest bpf/matchtest.bpf.c -- -O2 -g -Wall -Ibpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang-14 -target bpfel -output-suffix _test verifytest bpf/verifytest.bpf.c -- -O2 -g -Wall -Ibpf
