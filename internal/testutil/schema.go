package testutil

import (
	"bytes"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema compiles the draft 2020-12 JSON Schema raw, named name in
// failures, and fails t when it is not JSON or does not compile. The
// resource is registered under the schema's $id, as a validator that
// resolves references by it would.
func Schema(t testing.TB, name string, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", name, err)
	}
	id, _ := doc.(map[string]any)["$id"].(string)
	if id == "" {
		id = name
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(id, doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sch, err := c.Compile(id)
	if err != nil {
		t.Fatalf("%s does not compile: %v", name, err)
	}
	return sch
}

// SchemaFile is Schema of the file at path.
func SchemaFile(t testing.TB, path string) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Schema(t, path, raw)
}

// Validate checks the JSON document data against sch; a document that is
// not JSON is an error too.
func Validate(sch *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}
