package settings

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:generate go test -run ^TestSchemaFile$ -update-schema

// SchemaFile is the name of the settings file's JSON Schema in this
// directory and in the Debian package (/usr/share/srt-go/).
const SchemaFile = "srt-settings.schema.json"

// schemaFile is srt-settings.schema.json, which TestSchemaFile keeps
// equal to GenerateSchema's output.
//
//go:embed srt-settings.schema.json
var schemaFile []byte

// Schema returns the JSON Schema (draft 2020-12) of the settings file, as
// shipped in srt-settings.schema.json: every object accepts the keys the
// parser knows and no other, with the types, ranges and enumerations the
// parser checks. What only the parser can check (domain pattern grammar,
// regular expressions, a deniedDomainReasons key naming a deniedDomains
// entry) is not in it: a file the schema accepts can still be refused.
func Schema() []byte { return append([]byte(nil), schemaFile...) }

// GenerateSchema builds the schema from the key tables (keys.go),
// indented, with a final newline.
func GenerateSchema() ([]byte, error) {
	root := objectOf(topObject)
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "srt settings (~/.srt-settings.json)"
	root["description"] = "Filesystem and network policy of srt-go, the sandbox runtime. JSON with comments and trailing commas is accepted by srt."
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	return b.Bytes(), nil
}
