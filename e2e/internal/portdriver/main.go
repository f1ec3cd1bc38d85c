//go:build linux

// Command portdriver runs the sandbox port (package port) for the e2e
// tests as whichever user starts it: it reads one JSON request on stdin
// (a SandboxSpec, a backend, the commands to exec in order), launches,
// runs each command, destroys, and prints one JSON result on stdout. The
// same binary is the sandbox's PID 1 and guardian, as srt is.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/sandbox"
)

type request struct {
	Spec    port.Spec         `json:"spec"`
	Backend port.Backend      `json:"backend"`
	Execs   [][]string        `json:"execs"`
	Env     map[string]string `json:"env"`
	// NoNameGlobs runs with a launch policy without the file-name glob
	// write-denies, so that chat's writable binds can be tested.
	NoNameGlobs bool `json:"noNameGlobs"`
}

type result struct {
	Handle      port.Handle `json:"handle"`
	LaunchError string      `json:"launchError,omitempty"`
	Results     []execOut   `json:"results"`
}

type execOut struct {
	Types  []port.EventType `json:"types"`
	Stdout string           `json:"stdout"`
	Stderr string           `json:"stderr"`
	Code   int              `json:"code"`
	Error  string           `json:"error,omitempty"`
}

func main() {
	sandbox.Main()
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	opts := port.Options{}
	if req.NoNameGlobs {
		opts.NameGlobWriteDenies = []string{}
	}
	ctx := context.Background()
	p, err := port.New(ctx, opts)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	var res result
	sb, err := p.Launch(ctx, req.Spec, req.Backend)
	if err != nil {
		res.LaunchError = err.Error()
	} else {
		res.Handle = sb.Handle()
		for _, argv := range req.Execs {
			res.Results = append(res.Results, run(ctx, sb, argv, req.Env))
		}
		sb.Destroy(ctx)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func run(ctx context.Context, sb port.Sandbox, argv []string, env map[string]string) execOut {
	var out execOut
	ch, err := sb.Exec(ctx, port.ExecRequest{Argv: argv, Env: env, Timeout: 60 * time.Second})
	if err != nil {
		out.Error = err.Error()
		return out
	}
	var o, e strings.Builder
	for ev := range ch {
		out.Types = append(out.Types, ev.Type)
		switch ev.Type {
		case port.EventStdout:
			o.Write(ev.Data)
		case port.EventStderr:
			e.Write(ev.Data)
		case port.EventExit, port.EventKilled:
			out.Code = *ev.ExitCode
		}
	}
	out.Stdout, out.Stderr = o.String(), e.String()
	return out
}
