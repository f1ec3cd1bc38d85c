package settings

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite srt-settings.schema.json from the key tables (go generate ./settings)")

// TestSchemaFile keeps the shipped schema equal to the generated one.
func TestSchemaFile(t *testing.T) {
	gen, err := GenerateSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *updateSchema {
		if err := os.WriteFile(SchemaFile, gen, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(gen, Schema()) {
		t.Fatalf("%s is stale; run: go generate ./settings", SchemaFile)
	}
}

// compiledSchema compiles the shipped schema with a real validator.
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaFile, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// schemaAccepts validates a settings file (JSONC allowed) with sch.
func schemaAccepts(t *testing.T, sch *jsonschema.Schema, in string) (bool, bool) {
	t.Helper()
	b := []byte(strings.TrimPrefix(in, "\xEF\xBB\xBF"))
	if _, ok := standardize(b); !ok {
		return false, false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return false, false // not JSON: no verdict
	}
	return sch.Validate(inst) == nil, true
}

// objectCase places one member into a minimal valid file at one object of
// the settings; base are the keys that placement already spells.
type objectCase struct {
	name  string
	obj   object
	known []string // the checker's known-key list
	base  []string
	doc   func(member string) string
}

func objectCases() []objectCase {
	with := func(prefix, suffix string) func(string) string {
		return func(m string) string {
			if m != "" && !strings.HasSuffix(prefix, "{") {
				m = ", " + m
			}
			return prefix + m + suffix
		}
	}
	const pair = `{"credentials": {"envVars": [{"name": "A", "mode": "mask"}, {"name": "B", "mode": "mask"}], "awsPairs": [{"accessKeyIdVar": "A", "secretAccessKeyVar": "B"`
	return []objectCase{
		{"top", topObject, topKeys, nil, with(`{`, `}`)},
		{"network", networkObject, networkKeys, nil, with(`{"network": {`, `}}`)},
		{"filesystem", filesystemObject, filesystemKeys, nil, with(`{"filesystem": {`, `}}`)},
		{"git", gitObject, gitKeys, nil, with(`{"git": {`, `}}`)},
		{"path-entry", pathEntryObject, pathEntryKeys, []string{"path"}, with(`{"filesystem": {"denyRead": [{"path": "/a"`, `}]}}`)},
		{"credentials", credentialsObject, credentialsKeys, nil, with(`{"credentials": {`, `}}`)},
		{"credentials-file", credFileObject, credFileKeys, []string{"path", "mode"}, with(`{"credentials": {"files": [{"path": "/a", "mode": "mask"`, `}]}}`)},
		{"credentials-env", credEnvObject, credEnvKeys, []string{"name", "mode"}, with(`{"credentials": {"envVars": [{"name": "A", "mode": "mask"`, `}]}}`)},
		{"aws-pair", awsPairObject, awsPairKeys, []string{"accessKeyIdVar", "secretAccessKeyVar"}, with(pair, `}]}}`)},
		{"sigv4", sigv4Object, sigv4Keys, nil, with(`{"credentials": {"sigv4": {`, `}}}`)},
		{"tls-terminate", tlsTerminateObject, tlsTerminateKeys, nil, with(`{"network": {"tlsTerminate": {`, `}}}`)},
		{"mitm-proxy", mitmProxyObject, mitmProxyKeys, []string{"socketPath", "domains"}, with(`{"network": {"mitmProxy": {"socketPath": "/s", "domains": ["a.com"]`, `}}}`)},
		{"parent-proxy", parentProxyObject, parentProxyKeys, nil, with(`{"network": {"parentProxy": {`, `}}}`)},
		{"http-rule", httpRuleObject, httpRuleKeys, []string{"domains"}, with(`{"network": {"httpRules": [{"domains": ["a.com"]`, `}]}}`)},
	}
}

// TestSchemaAgreesWithParser: at every object, the parser and the schema
// give the same verdict on the object as placed (accepted), on an unknown
// key (refused), on each key set to null (accepted by both: every key is
// known to the parser) and on each key set to a fraction (refused by both,
// but for the reference's ignored keys, which take anything).
func TestSchemaAgreesWithParser(t *testing.T) {
	sch := compiledSchema(t)
	for _, oc := range objectCases() {
		if !slices.Equal(oc.obj.names(), oc.known) {
			t.Errorf("%s: the checker's known keys %q are not the table's %q", oc.name, oc.known, oc.obj.names())
		}
		check := func(member string, want bool) {
			in := oc.doc(member)
			_, perr := Parse([]byte(in), "f.json")
			ok, _ := schemaAccepts(t, sch, in)
			if (perr == nil) != want || ok != want {
				t.Errorf("%s: %s: parser error %v, schema accepts %v; want accepted %v", oc.name, in, perr, ok, want)
			}
		}
		check("", true)
		check(`"zzzUnknownKey": 1`, false)
		for _, k := range oc.obj.keys {
			if slices.Contains(oc.base, k.name) {
				continue
			}
			q := strconv.Quote(k.name)
			check(q+`: null`, true)
			check(q+`: 12.5`, len(k.shape) == 0)
		}
	}
}

// TestSchemaRefusesParserErrors: the files the parser refuses for a key
// or a type the schema describes are refused by the schema too.
func TestSchemaRefusesParserErrors(t *testing.T) {
	sch := compiledSchema(t)
	schemaKinds := []string{"unknown key", "expected ", "must be between", "must be an integer", "want one of",
		"missing key", "not supported", "must be an absolute path", "path cannot be empty", "the settings must be"}
	n := 0
	for _, tc := range errCases {
		if !slices.ContainsFunc(schemaKinds, func(k string) bool { return strings.HasPrefix(tc.msg, k) }) {
			continue
		}
		ok, verdict := schemaAccepts(t, sch, tc.in)
		if !verdict {
			continue
		}
		n++
		if ok {
			t.Errorf("%s: the parser refuses %q (%s) but the schema accepts it", tc.name, tc.in, tc.msg)
		}
	}
	if n < 20 {
		t.Fatalf("only %d parser errors checked against the schema", n)
	}
}

// TestSchemaAcceptsValidFiles: files the parser accepts, every key of
// every object among them, pass the schema.
func TestSchemaAcceptsValidFiles(t *testing.T) {
	sch := compiledSchema(t)
	files, err := filepath.Glob("testdata/valid-*.json*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid fixtures: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b, f); err != nil {
			t.Errorf("%s: the parser refuses it: %v", f, err)
		}
		if ok, verdict := schemaAccepts(t, sch, string(b)); !ok || !verdict {
			t.Errorf("%s: the schema refuses it", f)
		}
	}
}

// TestSchemaKeys: every key a checker's switch accepts is in the list its
// "unknown key" error names (so in the table, so in the schema); the
// other direction is TestSchemaAgreesWithParser's null members.
func TestSchemaKeys(t *testing.T) {
	byVar := map[string][]string{
		"topKeys": topKeys, "networkKeys": networkKeys, "filesystemKeys": filesystemKeys, "gitKeys": gitKeys,
		"pathEntryKeys": pathEntryKeys, "credentialsKeys": credentialsKeys, "credFileKeys": credFileKeys,
		"credEnvKeys": credEnvKeys, "awsPairKeys": awsPairKeys, "sigv4Keys": sigv4Keys,
		"tlsTerminateKeys": tlsTerminateKeys, "mitmProxyKeys": mitmProxyKeys, "parentProxyKeys": parentProxyKeys,
		"httpRuleKeys": httpRuleKeys,
	}
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			fn, ok := n.(*ast.FuncDecl)
			if !ok {
				return true
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.SwitchStmt)
				if !ok {
					return true
				}
				sel, ok := sw.Tag.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "name" {
					return true
				}
				list := unknownList(sw)
				if fn.Name.Name == "maskingMember" {
					list = "maskingMember"
				}
				if list == "" {
					return true
				}
				want := byVar[list]
				if list == "maskingMember" {
					want = maskingObject.names()
				}
				if want == nil {
					t.Errorf("%s: %s: switch's unknown list %s is not a key table", name, fn.Name.Name, list)
				}
				checked++
				for _, cl := range sw.Body.List {
					for _, e := range cl.(*ast.CaseClause).List {
						lit, ok := e.(*ast.BasicLit)
						if !ok {
							continue
						}
						k, _ := strconv.Unquote(lit.Value)
						if !slices.Contains(want, k) {
							t.Errorf("%s: %s accepts key %q, which is not in %s (keys.go)", name, fn.Name.Name, k, list)
						}
					}
				}
				return true
			})
			return false
		})
	}
	if checked < len(byVar) {
		t.Fatalf("only %d key switches found, want at least %d", checked, len(byVar))
	}
}

// unknownList is the name of the known-key list a switch's default clause
// passes to c.unknown, "" when it has none.
func unknownList(sw *ast.SwitchStmt) string {
	var out string
	for _, cl := range sw.Body.List {
		cc := cl.(*ast.CaseClause)
		if cc.List != nil {
			continue
		}
		for _, st := range cc.Body {
			ast.Inspect(st, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if s, ok := call.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "unknown" && len(call.Args) == 3 {
					if id, ok := call.Args[2].(*ast.Ident); ok {
						out = id.Name
					}
				}
				return true
			})
		}
	}
	return out
}
