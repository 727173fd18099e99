package check

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

//go:embed stdlib.flex
var stdlibText []byte

// library is the parsed and checked standard library.
type library struct {
	file *dsl.File
	mods map[string]*Mod
	// names lists the mods in declaration order.
	names []string
}

var (
	stdlibOnce sync.Once
	stdlibLib  *library
)

// stdlib returns the standard library, parsing and checking it on first use.
func stdlib() *library {
	stdlibOnce.Do(func() {
		lib, diags := loadLibrary("stdlib.flex", stdlibText)
		if diags.HasErrors() {
			panic(fmt.Sprintf("check: the embedded standard library has errors:\n%s", diags.Render()))
		}
		stdlibLib = lib
	})
	return stdlibLib
}

// loadLibrary parses and checks a library of mods.
func loadLibrary(name string, text []byte) (*library, dsl.Diagnostics) {
	f, diags := parser.ParseFile(name, text)
	lib := &library{file: f, mods: map[string]*Mod{}}
	if f == nil {
		return lib, diags
	}
	comments := newCommentIndex(f)
	for _, d := range f.Decls {
		md, ok := d.(*dsl.ModDecl)
		if !ok || md.Name == nil {
			diags.Add(f.Source, d.Span(), CodeNotAMod, "a library holds only mods")
			continue
		}
		m := newMod(md, f.Source, true, comments.docComment(md))
		lib.mods[m.Name] = m
		lib.names = append(lib.names, m.Name)
	}
	c := newChecker(f, lib)
	for _, n := range lib.names {
		c.checkMod(lib.mods[n])
	}
	diags = append(diags, c.diags...)
	diags.Sort()
	return lib, diags
}

// StdlibMods lists the standard library's mods in declaration order, each
// with its hover symbol (signature and doc comment).
func StdlibMods() []Symbol {
	lib := stdlib()
	out := make([]Symbol, 0, len(lib.names))
	for _, n := range lib.names {
		out = append(out, global{kind: SymStdMod, name: n, mod: lib.mods[n]}.symbol())
	}
	return out
}

// StdlibSource is the text of the standard library, for documentation.
func StdlibSource() string { return string(stdlibText) }
