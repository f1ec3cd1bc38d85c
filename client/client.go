// Package client is a small Go client of srtd's HTTP API (api/openapi.json).
// The bodies it sends and reads are package api's, the server's own.
//
//	c := client.New("http://127.0.0.1:7777", token)
//	h, err := c.Launch(ctx, port.Spec{SessionID: "s1", WorkspaceID: "w", Mode: port.ModeChat}, "")
//	events, err := c.Exec(ctx, "s1", client.ExecRequest{Argv: []string{"echo", "hi"}})
//	for ev, err := range events { ... }   // in order, ending with exit or killed
//	err = c.Destroy(ctx, "s1")
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"strings"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/port"
)

// Client talks to one srtd. It is safe for concurrent use.
type Client struct {
	// BaseURL is "http://127.0.0.1:PORT", without a trailing slash.
	BaseURL string
	// Token is the bearer token from srtd's token file.
	Token string
	// HTTP is the client used. Nil means http.DefaultClient.
	HTTP *http.Client
}

// New returns a Client of the srtd at baseURL.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimSuffix(baseURL, "/"), Token: token}
}

// ReadToken reads a token file written by srtd.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Error is an error answer of srtd (body api.Error).
type Error struct {
	// Status is the HTTP status: 400 bad request (Field names the field),
	// 401 bad token, 404 unknown session, 409 illegal transition or
	// conflict, 413 body too large, 422 unenforceable policy, 429 a limit,
	// 503 backend unavailable (see api.Error).
	Status int
	// Message is api.Error.Error, or the body as text when it is not an
	// api.Error.
	Message string
	// Field is api.Error.Field.
	Field string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("srtd: %d: %s (field %s)", e.Status, e.Message, e.Field)
	}
	return fmt.Sprintf("srtd: %d: %s", e.Status, e.Message)
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a request with a JSON body (nil for none) and returns the
// response when its status is want; any other status is an *Error.
func (c *Client) do(ctx context.Context, method, path string, body any, want int) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		defer resp.Body.Close()
		e := &Error{Status: resp.StatusCode}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var body api.Error
		if json.Unmarshal(b, &body) != nil {
			e.Message = strings.TrimSpace(string(b))
		} else {
			e.Message, e.Field = body.Error, body.Field
		}
		return nil, e
	}
	return resp, nil
}

func (c *Client) call(ctx context.Context, method, path string, body any, want int, out any) error {
	resp, err := c.do(ctx, method, path, body, want)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Healthz checks liveness.
func (c *Client) Healthz(ctx context.Context) error {
	return c.call(ctx, "GET", "/healthz", nil, http.StatusOK, nil)
}

// Probe returns the host probe srtd ran at start-up.
func (c *Client) Probe(ctx context.Context) (port.Probe, error) {
	var p port.Probe
	return p, c.call(ctx, "GET", "/v1/probe", nil, http.StatusOK, &p)
}

// Launch starts a sandbox. backend "" means srtd's default.
// spec.NetworkEnabled is sent as it is (false stays false).
func (c *Client) Launch(ctx context.Context, spec port.Spec, backend port.Backend) (port.Handle, error) {
	var h port.Handle
	req := api.LaunchRequest{Spec: spec, NetworkEnabled: &spec.NetworkEnabled, Backend: backend}
	return h, c.call(ctx, "POST", "/v1/sandboxes", req, http.StatusCreated, &h)
}

// Get returns a session's handle.
func (c *Client) Get(ctx context.Context, sessionID string) (port.Handle, error) {
	var h port.Handle
	return h, c.call(ctx, "GET", "/v1/sandboxes/"+sessionID, nil, http.StatusOK, &h)
}

// Suspend freezes a session.
func (c *Client) Suspend(ctx context.Context, sessionID string) (port.Handle, error) {
	var h port.Handle
	return h, c.call(ctx, "POST", "/v1/sandboxes/"+sessionID+"/suspend", nil, http.StatusOK, &h)
}

// Resume thaws a session.
func (c *Client) Resume(ctx context.Context, sessionID string) (port.Handle, error) {
	var h port.Handle
	return h, c.call(ctx, "POST", "/v1/sandboxes/"+sessionID+"/resume", nil, http.StatusOK, &h)
}

// Destroy tears a session down.
func (c *Client) Destroy(ctx context.Context, sessionID string) (port.Handle, error) {
	var h port.Handle
	return h, c.call(ctx, "DELETE", "/v1/sandboxes/"+sessionID, nil, http.StatusOK, &h)
}

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec, api.ExecRequest.
type ExecRequest = api.ExecRequest

// Exec runs a command and returns its events in order. The sequence ends
// after the exit or killed event; an error ends it early. Stopping the
// iteration (or ctx ending) drops the connection, which kills the command.
func (c *Client) Exec(ctx context.Context, sessionID string, req ExecRequest) (iter.Seq2[port.Event, error], error) {
	resp, err := c.do(ctx, "POST", "/v1/sandboxes/"+sessionID+"/exec", req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return func(yield func(port.Event, error) bool) {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev port.Event
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				yield(ev, fmt.Errorf("srtd: event: %w", err))
				return
			}
			if !yield(ev, nil) {
				return
			}
			if ev.Type == port.EventExit || ev.Type == port.EventKilled {
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		yield(port.Event{}, fmt.Errorf("srtd: event stream ended before exit: %w", err))
	}, nil
}

// Run is Exec collecting stdout and stderr, returning the exit code
// (128+N for a kill by signal N, -1 when killed without a code).
func (c *Client) Run(ctx context.Context, sessionID string, req ExecRequest) (stdout, stderr []byte, code int, err error) {
	events, err := c.Exec(ctx, sessionID, req)
	if err != nil {
		return nil, nil, 0, err
	}
	code = -1
	for ev, err := range events {
		if err != nil {
			return stdout, stderr, code, err
		}
		switch ev.Type {
		case port.EventStdout:
			stdout = append(stdout, ev.Data...)
		case port.EventStderr:
			stderr = append(stderr, ev.Data...)
		case port.EventExit:
			if ev.ExitCode != nil {
				code = *ev.ExitCode
			}
		case port.EventKilled:
			if ev.ExitCode != nil {
				code = *ev.ExitCode
			}
			err = errors.New("srtd: killed: " + ev.Reason)
			return stdout, stderr, code, err
		}
	}
	return stdout, stderr, code, nil
}
