module github.com/kerntune/kerntune

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/spf13/cobra v1.10.2
	golang.org/x/sys v0.49.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/text v0.23.0 // indirect
)
