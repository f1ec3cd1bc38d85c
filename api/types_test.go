package api

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// members lists the JSON member names of a struct type as encoding/json
// sees them: untagged embedded structs inlined, "-" skipped.
func members(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, members(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestTypesMatchOpenAPI: every body type has exactly the members its
// schema in api/openapi.json documents, so the document and the Go types
// cannot drift apart.
func TestTypesMatchOpenAPI(t *testing.T) {
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"Health": Health{}, "Error": Error{}, "Probe": Probe{}, "BindMount": BindMount{},
		"LaunchRequest": LaunchRequest{}, "Handle": Handle{}, "ExecRequest": ExecRequest{},
		"Violation": Violation{}, "Event": Event{}, "TerminalRequest": TerminalRequest{},
		"TerminalInfo": TerminalInfo{}, "SandboxEvent": Event{}, "PatchRequest": PatchRequest{},
	} {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("%s: no schema in openapi.json", name)
			continue
		}
		var want []string
		for k := range s.Properties {
			want = append(want, k)
		}
		slices.Sort(want)
		if got := members(reflect.TypeOf(v)); !slices.Equal(got, want) {
			t.Errorf("%s: members %v, openapi.json documents %v", name, got, want)
		}
	}
}

// TestLaunchRequestNetworkEnabled: an absent networkEnabled decodes as
// nil (srtd: true), and a client's false is sent, not dropped.
func TestLaunchRequestNetworkEnabled(t *testing.T) {
	var r LaunchRequest
	if err := json.Unmarshal([]byte(`{"sessionId":"s"}`), &r); err != nil || r.NetworkEnabled != nil {
		t.Fatalf("absent: %v, %v", r.NetworkEnabled, err)
	}
	off := false
	b, _ := json.Marshal(LaunchRequest{Spec: Spec{SessionID: "s"}, NetworkEnabled: &off, Backend: "native"})
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["networkEnabled"] != false || m["backend"] != "native" || m["sessionId"] != "s" {
		t.Fatalf("encoded %s", b)
	}
}

// TestTerminalExitCodeZero: an exit message carries a zero code.
func TestTerminalExitCodeZero(t *testing.T) {
	zero := 0
	b, _ := json.Marshal(TerminalMessage{Type: TerminalExit, ExitCode: &zero})
	if string(b) != `{"type":"exit","exitCode":0}` {
		t.Fatalf("encoded %s", b)
	}
	b, _ = json.Marshal(TerminalMessage{Type: TerminalResize, Cols: 80, Rows: 24})
	if string(b) != `{"type":"resize","cols":80,"rows":24}` {
		t.Fatalf("encoded %s", b)
	}
}
