package check

// Names a pasted file imports from math and torch: `from math import
// floor` makes a bare floor(x) math.floor(x) (an int of a number), as
// Python reads it.

import (
	"strings"

	"github.com/maskc/maskc/dsl"
)

// importModules are the modules whose imported names stand for their
// qualified built-ins (math.floor, torch.where).
var importModules = map[string]bool{"math": true, "torch": true}

// pythonImports maps each name that the file's `from math import ...` and
// `from torch import ...` lines bind (the parser keeps them as Python
// comment lines) to the qualified name it stands for: floor to math.floor,
// `where as w` binds w to torch.where. A `*` import binds nothing here.
func pythonImports(f *dsl.File) map[string]string {
	var out map[string]string
	for _, c := range f.Comments {
		if !c.Python {
			continue
		}
		fields := strings.Fields(strings.NewReplacer(",", " , ", "(", " ", ")", " ", "\\", " ").Replace(c.Text))
		if len(fields) < 4 || fields[0] != "from" || !importModules[fields[1]] || fields[2] != "import" {
			continue
		}
		for _, item := range strings.Split(strings.Join(fields[3:], " "), ",") {
			words := strings.Fields(item)
			name, as := "", ""
			switch {
			case len(words) == 1:
				name, as = words[0], words[0]
			case len(words) == 3 && words[1] == "as":
				name, as = words[0], words[2]
			default:
				continue
			}
			if name == "*" || strings.Contains(name, ".") {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[as] = fields[1] + "." + name
		}
	}
	return out
}

// imported returns the qualified name that name stands for in f through
// the file's imports (pythonImports), unless a binding of f's or a
// declaration of the file's own takes the name.
func (c *checker) imported(f *frame, name string) (string, bool) {
	q, ok := c.prog.imports[name]
	if !ok || f.std || f.names[name] != nil {
		return "", false
	}
	if c.prog.params[name] != nil || c.prog.buffers[name] != nil || c.prog.mods[name] != nil {
		return "", false
	}
	return q, true
}
