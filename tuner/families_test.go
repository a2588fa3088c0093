package tuner

// The families that live in their own folder register themselves when
// imported: the tests that range over every family (the mutation tests,
// verification on the CPU) see them too.
import _ "github.com/kerntune/kerntune/family/all"
