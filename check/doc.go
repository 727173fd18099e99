// Package check is the semantic stage of maskc: it resolves the names of a
// parsed .flex file, types every expression (bool < int < float, with
// Python's promotion), folds constants, applies `-D NAME=VALUE` overrides to
// params, validates buffers and attention settings, and lowers mods to the
// closed dsl.Lowered form that the classifier, the code generator and the
// reference evaluator consume.
//
// The entry point is Check, which never stops at the first problem: it
// returns every diagnostic, sorted, together with a Program that is filled
// as far as checking got, so that editors can still hover. Side tables in
// Program.Info (types, constants, definitions and uses) follow cel-go's
// checked-AST design: the source AST is never mutated.
//
// A standard library of common mods (causal, sliding_window, document, alibi,
// softcap, ...) written in .flex (stdlib.flex) is available to every file;
// user declarations shadow it.
package check
