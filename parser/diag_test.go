package parser_test

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// diagnosticCases pin the full rendered text (header, snippet, caret, hint)
// of every syntax diagnostic the parser emits.
var diagnosticCases = []struct {
	src, want string
}{
	{
		"@torch.vmap\ndef f(b, h, q, kv):\n    return q >= kv\n",
		"t.flex:1:1: error[E019]: decorator @torch.vmap may change the function it wraps; maskc reads past only decorators that do not\n" +
			" 1 | @torch.vmap\n" +
			"   | ^^^^^^^^^^^\n" +
			"   = hint: remove it, or use one maskc knows leaves the function unchanged: @functools.lru_cache, @torch.compile, @torch.no_grad\n",
	},
	{
		"def f(W, V=1, U):\n    def g(b, h, q, kv):\n        return q - kv < W\n    return g\n",
		"t.flex:1:15: error[E072]: parameter U without a default follows a parameter with one\n" +
			" 1 | def f(W, V=1, U):\n" +
			"   |               ^\n" +
			"   = hint: give U a default too, or move it before the parameters that have one (as Python requires)\n",
	},
	{
		"def f(W):\n    def g(b, h, q, kv=0):\n        return q - kv < W\n    return g\n",
		"t.flex:2:23: error[E072]: a default value on a parameter of g, which FlexAttention always passes\n" +
			" 2 |     def g(b, h, q, kv=0):\n" +
			"   |                       ^\n" +
			"   = hint: remove the default; give defaults to the factory's parameters instead\n",
	},
	{
		"def f(W,, V):\n    def g(b, h, q, kv):\n        return q - kv < W\n    return g\n",
		"t.flex:1:9: error[E011]: expected a parameter name between the two commas\n" +
			" 1 | def f(W,, V):\n" +
			"   |         ^\n" +
			"   = hint: remove one of the commas\n",
	},
	{
		"causal = lambda b, h, q, kv q >= kv\n",
		"t.flex:1:1: error[E010]: expected a declaration, found `causal`\n" +
			" 1 | causal = lambda b, h, q, kv q >= kv\n" +
			"   | ^^^^^^\n" +
			"   = hint: a lambda bound to a name takes names and one expression: `causal = lambda b, h, q_idx, kv_idx: ...`\n",
	},
	{
		// An import's list that never closes reads past nothing after it.
		"from torch import (a,\ndef f(b, h, q, kv):\n    return q >= kv\n",
		"t.flex:1:19: error[E008]: unclosed `(`\n" +
			" 1 | from torch import (a,\n" +
			"   |                   ^\n" +
			"   = hint: add the matching `)`\n",
	},
	{
		"from torch\n",
		"t.flex:1:1: error[E010]: expected a declaration, found `from`\n" +
			" 1 | from torch\n" +
			"   | ^^^^\n" +
			"   = hint: an import names a module: `import torch`, `from functools import partial`; torch, math and partial are built in\n",
	},
	{
		"def f(score, b, h, q, kv):\n    return score + float(\"in\u202ef\")\n",
		"t.flex:2:29: error[E070]: invalid character U+202E in a string\n" +
			" 2 |     return score + float(\"in\\u202ef\")\n" +
			"   |                             ^^^^^^\n" +
			"   = hint: remove it: control characters and bidirectional marks show text other than what tools read\n",
	},
	{
		"def A(A00):\n",
		"t.flex:1:12: error[E014]: the body of def `A` ends without `return`\n" +
			" 1 | def A(A00):\n" +
			"   |            ^\n" +
			"   = hint: end the body with `return EXPR` (a factory with `return INNER`)\n",
	},
	{
		"def A(b, h, q, kv):\n    x = 1\n    return x > 0\n    y = 2\n",
		"t.flex:4:5: error[E013]: expected the end of def `A` after its `return`, found `y`\n" +
			" 4 |     y = 2\n" +
			"   |     ^\n" +
			"   = hint: a def ends with its `return`; statements after it would never run\n",
	},
	{
		"def f(W):\n    def g(b, h, q, kv):\n        return q > W\n",
		"t.flex:3:21: error[E014]: factory `f` ends without `return g`\n" +
			" 3 |         return q > W\n" +
			"   |                     ^\n" +
			"   = hint: end the factory with `return g`, indented like the `def g` above it\n",
	},
	{
		"def f(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx \"\"\"a\nb\"\"\"\n",
		"t.flex:2:28: error[E013]: expected end of line after the expression, found a string over several lines, `\"\"\"a ...`\n" +
			" 2 |     return q_idx >= kv_idx \"\"\"a\n" +
			"   |                            ^^^^\n" +
			"   = hint: is an operator missing? Each declaration, setting and `let` ends at the end of its line\n",
	},
	{
		// `del b, h` is read past; a name read after it is Python's NameError.
		"def f(b, h, q_idx, kv_idx):\n    del b, h\n    return q_idx >= kv_idx + h\n",
		"t.flex:3:30: error[E081]: h is read after `del h` on line 2 unbound it: Python raises NameError here\n" +
			" 3 |     return q_idx >= kv_idx + h\n" +
			"   |                              ^\n" +
			"   = hint: remove h from the `del`, or stop reading it\n",
	},
	{
		"def f(b, h, q_idx, kv_idx):\n    del kv_idx[0]\n    return q_idx\n",
		"t.flex:2:5: error[E011]: a `del` of something but names in def `f`: a mod reads tensors, it does not change them\n" +
			" 2 |     del kv_idx[0]\n" +
			"   |     ^^^\n" +
			"   = hint: remove it; `del` of names only (`del b, h`) is read past\n",
	},
	{
		"def f(b, h, q_idx, kv_idx):\n    while True:\n        pass\n    return q_idx >= kv_idx\n",
		"t.flex:2:5: error[E011]: a `while` loop in def `f`: maskc unrolls only `for` loops over range() of constants\n" +
			" 2 |     while True:\n" +
			"   |     ^^^^^\n" +
			"   = hint: write it as `for i in range(N):` with N a constant, a param or a factory argument\n",
	},
	{
		// In a factory's set-up the same line parses (a dsl.InPlaceStmt,
		// which check refuses as E082); in an inner def it is refused here.
		"def f(ids):\n    def m(b, h, q_idx, kv_idx):\n        ids[:, -1] = 0\n        return ids[b, q_idx] == ids[b, kv_idx]\n    return m\n",
		"t.flex:3:12: error[E079]: assigning into `ids[...]` changes a tensor in place, which a mod cannot do: a mod computes one value per (q, kv) pair\n" +
			" 3 |         ids[:, -1] = 0\n" +
			"   |            ^\n" +
			"   = hint: prepare tensors in Python before the call (here, the tensor work of def `f`) and pass the result as a buffer: declare it, e.g. `buffer ids: i32[B, KV]`, and index it in the mask_mod\n",
	},
	{
		"def f(b, h, q_idx, kv_idx):\n    return ids[b, 1:] == 0\n",
		"t.flex:2:20: error[E079]: a slice (`:`) takes part of a tensor, but a mod reads one element per index: it computes one value per (q, kv) pair\n" +
			" 2 |     return ids[b, 1:] == 0\n" +
			"   |                    ^\n" +
			"   = hint: index with one expression per dimension, e.g. `ids[b, kv_idx]`; prepare sliced or shifted tensors in Python and pass the result as a buffer\n",
	},
	{
		"mask m(b, h, q, kv) = (ids[:])[q]\n",
		"t.flex:1:28: error[E079]: a slice (`:`) takes part of a tensor, but a mod reads one element per index: it computes one value per (q, kv) pair\n" +
			" 1 | mask m(b, h, q, kv) = (ids[:])[q]\n" +
			"   |                            ^\n" +
			"   = hint: index with one expression per dimension, e.g. `ids[b, kv_idx]`; prepare sliced or shifted tensors in Python and pass the result as a buffer\n",
	},
	{
		"def f(*mods, w):\n    def m(b, h, q_idx, kv_idx):\n        return q_idx >= kv_idx\n    return m\n",
		"t.flex:1:7: error[E072]: `*mods` must be the last parameter of the factory\n" +
			" 1 | def f(*mods, w):\n" +
			"   |       ^\n" +
			"   = hint: move *mods after the other parameters (maskc takes no keyword-only parameters)\n",
	},
	{
		"def f(b, h, *idx):\n    return b >= 0\n",
		"t.flex:1:13: error[E072]: `*idx` is taken only by a factory (a def that returns its inner def); a mod's parameters are exactly (b, h, q_idx, kv_idx)\n" +
			" 1 | def f(b, h, *idx):\n" +
			"   |             ^\n" +
			"   = hint: name each parameter: (b, h, q_idx, kv_idx), or (score, b, h, q_idx, kv_idx) for a score_mod; a helper takes a tuple argument instead\n",
	},
	{
		"mask m(*w)(b, h, q, kv) = q >= kv\n",
		"t.flex:1:8: error[E072]: a `*w` parameter is only written in a def factory\n" +
			" 1 | mask m(*w)(b, h, q, kv) = q >= kv\n" +
			"   |        ^\n" +
			"   = hint: declare the factory as a def, `def NAME(*w):` with an inner def\n",
	},
	{
		"def A(b, h, q, kv):\n    foo(q)\n    return q > 0\n",
		"t.flex:2:8: error[E012]: expected `=` after `foo`, found `(`\n" +
			" 2 |     foo(q)\n" +
			"   |        ^\n" +
			"   = hint: a def body holds assignments `name = ...` and a final `return ...`\n",
	},
	{
		"def A(b, h, q, kv)\n    return q > kv\n",
		"t.flex:1:19: error[E012]: expected `:` to start the body of def `A`, found end of line\n" +
			" 1 | def A(b, h, q, kv)\n" +
			"   |                   ^\n" +
			"   = hint: write `def A(...):`, then the body indented on the lines below\n",
	},
	{
		"mask m(b, h, q, kv) = q $ kv\n",
		"t.flex:1:25: error[E001]: invalid character `$` (U+0024)\n" +
			" 1 | mask m(b, h, q, kv) = q $ kv\n" +
			"   |                         ^\n" +
			"   = hint: expressions use Python operators: + - * / // % ** == != < <= > >= & | ^ ~ << >> and or not\n",
	},
	{
		"param A = 1 \\ 2\n",
		"t.flex:1:13: error[E001]: invalid character `\\` (U+005C)\n" +
			" 1 | param A = 1 \\ 2\n" +
			"   |             ^\n" +
			"   = hint: a `\\` joins lines only as the last character of its line; or break long expressions inside parentheses\n",
	},
	{
		// Python's explicit line joining: no error.
		"param A = 1 + \\\n    2\nmask m(b, h, q, kv) = q - kv < A\n",
		"",
	},
	{
		"param s = \"x\n",
		"t.flex:1:11: error[E070]: unterminated string\n" +
			" 1 | param s = \"x\n" +
			"   |           ^^\n" +
			"   = hint: close it with \" on the same line\n",
	},
	{
		"param s = \"a\\\\b\"\n",
		"t.flex:1:13: error[E070]: escapes are not supported in strings\n" +
			" 1 | param s = \"a\\\\b\"\n" +
			"   |             ^\n" +
			"   = hint: strings are only `float(\"inf\")` and keyword values such as rounding_mode=\"floor\"\n",
	},
	{
		"def f(b, h, q, kv):\n    \"\"\"doc\n",
		"t.flex:2:5: error[E070]: unterminated docstring\n" +
			" 2 |     \"\"\"doc\n" +
			"   |     ^^^\n" +
			"   = hint: close it with \"\"\"\n",
	},
	{
		"def f(b, h, q, kv):\nreturn q >= kv\n",
		"t.flex:2:1: error[E071]: expected an indented statement of def f\n" +
			" 2 | return q >= kv\n" +
			"   | ^^^^^^\n" +
			"   = hint: indent the body of def f past its `def`, e.g. by 4 spaces\n",
	},
	{
		"def f(b, h, q, kv):\n    x = q - kv\n      return x >= 0\n",
		"t.flex:3:7: error[E071]: unexpected indent in def f\n" +
			" 3 |       return x >= 0\n" +
			"   |       ^^^^^^\n" +
			"   = hint: indent every statement of def f by the same amount (column 5)\n",
	},
	{
		"def f(W):\n    def g(b, h, q, kv):\n        return q - kv <= W\n    g += 1\n    return g\n",
		"t.flex:4:7: error[E072]: `+=` on a mod in factory f\n" +
			" 4 |     g += 1\n" +
			"   |       ^^\n" +
			"   = hint: combine mods with and_masks(...) or or_masks(...)\n",
	},
	{
		"mask m(b, h, q: int, kv) = q >= kv\n",
		"t.flex:1:17: error[E072]: type annotations are only written in a def\n" +
			" 1 | mask m(b, h, q: int, kv) = q >= kv\n" +
			"   |                 ^^^\n" +
			"   = hint: write the parameter name alone: q\n",
	},
	{
		"param P = (x=1)\n",
		"t.flex:1:12: error[E072]: keyword argument `x=` outside a call\n" +
			" 1 | param P = (x=1)\n" +
			"   |            ^\n" +
			"   = hint: keyword arguments are written in calls, e.g. x.clamp(min=0)\n",
	},
	{
		"param A = 12ab\n",
		"t.flex:1:11: error[E002]: malformed number `12ab`\n" +
			" 1 | param A = 12ab\n" +
			"   |           ^^^^\n" +
			"   = hint: write an integer such as `1024`, `1_000` or `0x7f`, or a float such as `30.0`, `1e-4` or `.5`\n",
	},
	{
		"param A = 017\n",
		"t.flex:1:11: error[E002]: malformed number `017`: leading zeros are not allowed\n" +
			" 1 | param A = 017\n" +
			"   |           ^^^\n" +
			"   = hint: write `17`, or `0o17` for an octal number\n",
	},
	{
		"param A = 99999999999999999999\n",
		"t.flex:1:11: error[E003]: integer `99999999999999999999` does not fit in 64 bits\n" +
			" 1 | param A = 99999999999999999999\n" +
			"   |           ^^^^^^^^^^^^^^^^^^^^\n" +
			"   = hint: integers are 64-bit signed: at most 9223372036854775807\n",
	},
	{
		"param A = 1e999\n",
		"t.flex:1:11: error[E003]: float `1e999` is out of range\n" +
			" 1 | param A = 1e999\n" +
			"   |           ^^^^^\n" +
			"   = hint: floats are 64-bit: write `inf` for infinity\n",
	},
	{
		"param A = 1\x00\n",
		"t.flex:1:12: error[E004]: binary input: NUL byte\n" +
			" 1 | param A = 1\\x00\n" +
			"   |            ^^^^\n" +
			"   = hint: a .flex file must be UTF-8 text; is this the right file?\n",
	},
	{
		"param A = 1\n# caf\xe9\n",
		"t.flex:2:6: error[E004]: binary input: invalid UTF-8 byte 0xE9\n" +
			" 2 | # caf\\xe9\n" +
			"   |      ^^^^\n" +
			"   = hint: a .flex file must be UTF-8 text; is this the right file?\n",
	},
	{
		"mask m(b, h, q, kv) = ((((q >= kv)\n",
		"t.flex:1:25: error[E008]: unclosed `(`\n" +
			" 1 | mask m(b, h, q, kv) = ((((q >= kv)\n" +
			"   |                         ^\n" +
			"   = hint: add the matching `)`\n",
	},
	{
		"mask m(b, h, q, kv) = q >= kv)\n",
		"t.flex:1:30: error[E009]: `)` closes nothing\n" +
			" 1 | mask m(b, h, q, kv) = q >= kv)\n" +
			"   |                              ^\n" +
			"   = hint: remove it, or add the opening `(` before it\n",
	},
	{
		"mask m(b, h, q, kv) = f(q]\n",
		"t.flex:1:26: error[E009]: `]` does not match the `(` opened at 1:24\n" +
			" 1 | mask m(b, h, q, kv) = f(q]\n" +
			"   |                          ^\n" +
			"   = hint: close the `(` with `)` first\n",
	},
	{
		"mask m(b, h, q, kv) = doc[q)\n",
		"t.flex:1:28: error[E009]: `)` does not match the `[` opened at 1:26\n" +
			" 1 | mask m(b, h, q, kv) = doc[q)\n" +
			"   |                            ^\n" +
			"   = hint: close the `[` with `]` first\n",
	},
	{
		"def m(b, h, q_idx, kv_idx):  if q_idx > 0:\n",
		"t.flex:1:42: error[E071]: expected an indented block after `if`\n" +
			" 1 | def m(b, h, q_idx, kv_idx):  if q_idx > 0:\n" +
			"   |                                          ^\n" +
			"   = hint: put the statements of the `if` on the lines under it, indented past it (`pass` for none)\n",
	},
	{
		"  WINDOW = 1024\n",
		"t.flex:1:3: error[E010]: a Python module constant starts at the start of its line\n" +
			" 1 |   WINDOW = 1024\n" +
			"   |   ^^^^^^\n" +
			"   = hint: remove the indentation before WINDOW, as Python requires\n",
	},
	{
		"foo 1\n",
		"t.flex:1:1: error[E010]: expected a declaration, found `foo`\n" +
			" 1 | foo 1\n" +
			"   | ^^^\n" +
			"   = hint: a declaration starts with `param`, `buffer`, `mask`, `score`, `def` or `attention`\n",
	},
	{
		"let x = 1\n",
		"t.flex:1:1: error[E010]: expected a declaration, found keyword `let`\n" +
			" 1 | let x = 1\n" +
			"   | ^^^\n" +
			"   = hint: `let` is only allowed in a block body: `mask m(b, h, q, kv) { let d = ... }`\n",
	},
	{
		"param A = 1\n  + 2\n",
		"t.flex:2:3: error[E010]: expected a declaration, found `+`\n" +
			" 2 |   + 2\n" +
			"   |   ^\n" +
			"   = hint: to continue an expression on the next line, put it in parentheses\n",
	},
	{
		"mask m(b, h, q, kv) = q ==\n",
		"t.flex:1:27: error[E011]: expected an expression after `==`, found end of line\n" +
			" 1 | mask m(b, h, q, kv) = q ==\n" +
			"   |                           ^\n" +
			"   = hint: complete the expression; to continue it on the next line, put it in parentheses\n",
	},
	{
		"mask m(b, h, q, kv) = q == not kv\n",
		"t.flex:1:28: error[E011]: expected an expression after `==`, found keyword `not`\n" +
			" 1 | mask m(b, h, q, kv) = q == not kv\n" +
			"   |                            ^^^\n" +
			"   = hint: `not` binds more loosely than `==`: write `(not x)`\n",
	},
	{
		"mask m(b, h, q, kv) = q if kv\n",
		"t.flex:1:30: error[E011]: expected `else` to complete `x if c else y`\n" +
			" 1 | mask m(b, h, q, kv) = q if kv\n" +
			"   |                              ^\n" +
			"   = hint: Python's conditional is `x if c else y`; or write `where(c, x, y)`\n",
	},
	{
		"mask m(b, h, q, kv) = q else kv\n",
		"t.flex:1:25: error[E011]: `else` without a matching `if`\n" +
			" 1 | mask m(b, h, q, kv) = q else kv\n" +
			"   |                         ^^^^\n" +
			"   = hint: Python's conditional is `x if c else y`\n",
	},
	{
		"score s(score, b, h, q, kv) = score * not q\n",
		"t.flex:1:39: error[E011]: expected an expression after `*`, found keyword `not`\n" +
			" 1 | score s(score, b, h, q, kv) = score * not q\n" +
			"   |                                       ^^^\n" +
			"   = hint: `not` binds more loosely than `*`: write `(not x)`\n",
	},
	{
		"param A = * 3\n",
		"t.flex:1:11: error[E011]: expected an expression after `=`, found `*`\n" +
			" 1 | param A = * 3\n" +
			"   |           ^\n" +
			"   = hint: `*` joins two operands: one is missing before it\n",
	},
	{
		"param A = if\n",
		"t.flex:1:11: error[E011]: expected an expression after `=`, found keyword `if`\n" +
			" 1 | param A = if\n" +
			"   |           ^^\n" +
			"   = hint: `if` is a keyword and cannot start an expression\n",
	},
	{
		"mask m(b, h, q, kv) = q ~ kv\n",
		"t.flex:1:25: error[E011]: `~` negates one operand; it cannot join two\n" +
			" 1 | mask m(b, h, q, kv) = q ~ kv\n" +
			"   |                         ^\n" +
			"   = hint: to combine with a negation write `a & ~b`\n",
	},
	{
		"mask m(b, h, q, kv) = f(q; kv)\n",
		"t.flex:1:26: error[E011]: expected `,` or `)`, found `;`\n" +
			" 1 | mask m(b, h, q, kv) = f(q; kv)\n" +
			"   |                          ^\n" +
			"   = hint: separate the elements of a list with `,`; is an operator missing?\n",
	},
	{
		"param A = 1; param B = 2\n",
		"t.flex:1:14: error[E010]: expected a declaration, found keyword `param`\n" +
			" 1 | param A = 1; param B = 2\n" +
			"   |              ^^^^^\n" +
			"   = hint: declarations are separated by new lines, not `;`\n",
	},
	{
		"mask m(b, h, q, kv) {}\n",
		"t.flex:1:22: error[E014]: the body of mask `m` has no result expression\n" +
			" 1 | mask m(b, h, q, kv) {}\n" +
			"   |                      ^\n" +
			"   = hint: end the block with the mask's value, e.g. `q >= kv`\n",
	},
	{
		"mask m(b, h, q, kv) = f(a b)\n",
		"t.flex:1:27: error[E011]: expected `,` or `)`, found `b`\n" +
			" 1 | mask m(b, h, q, kv) = f(a b)\n" +
			"   |                           ^\n" +
			"   = hint: separate the elements of a list with `,`; is an operator missing?\n",
	},
	{
		"mask m(b, h, q, kv) = f(a,, b)\n",
		"t.flex:1:27: error[E011]: expected an expression after `,`, found `,`\n" +
			" 1 | mask m(b, h, q, kv) = f(a,, b)\n" +
			"   |                           ^\n" +
			"   = hint: remove the extra `,`\n",
	},
	{
		"mask m(b, h, q, kv) = doc[q,]\n",
		"t.flex:1:28: error[E011]: trailing `,` in an index\n" +
			" 1 | mask m(b, h, q, kv) = doc[q,]\n" +
			"   |                            ^\n" +
			"   = hint: remove the `,`: write one index per buffer dimension\n",
	},
	{
		"mask m(b, h, q, kv) = q = kv\n",
		"t.flex:1:25: error[E011]: unexpected `=` in an expression\n" +
			" 1 | mask m(b, h, q, kv) = q = kv\n" +
			"   |                         ^\n" +
			"   = hint: compare with `==`; `=` only introduces a value\n",
	},
	{
		"mask m(b, h, q, kv) = {\n    q >= kv\n}\n",
		"t.flex:1:23: error[E011]: expected an expression after `=`, found `{`\n" +
			" 1 | mask m(b, h, q, kv) = {\n" +
			"   |                       ^\n" +
			"   = hint: a block body has no `=`: write `mask m(...) {`\n",
	},
	{
		"param 1 = 2\n",
		"t.flex:1:7: error[E011]: expected a name after `param`, found `1`\n" +
			" 1 | param 1 = 2\n" +
			"   |       ^\n" +
			"   = hint: names are letters, digits and `_`, not starting with a digit\n",
	},
	{
		"buffer d: [KV]\n",
		"t.flex:1:11: error[E011]: expected an element type after `buffer d:`, found `[`\n" +
			" 1 | buffer d: [KV]\n" +
			"   |           ^\n" +
			"   = hint: the element type is one of u8, i8, i16, i32, i64, f16, bf16, f32, f64, bool\n",
	},
	{
		"mask m(b, h, 1, kv) = q\n",
		"t.flex:1:14: error[E011]: expected a parameter name, `,` or `)`, found `1`\n" +
			" 1 | mask m(b, h, 1, kv) = q\n" +
			"   |              ^\n" +
			"   = hint: parameters are names: `mask m(b, h, q, kv)`\n",
	},
	{
		"attention a {\n    = 1\n}\n",
		"t.flex:2:5: error[E011]: expected a setting `key = value`, found `=`\n" +
			" 2 |     = 1\n" +
			"   |     ^\n" +
			"   = hint: settings are lines such as `mask = causal` or `dtype = bf16`\n",
	},
	{
		"param X 1024\n",
		"t.flex:1:9: error[E012]: expected `=` after `param X`, found `1024`\n" +
			" 1 | param X 1024\n" +
			"   |         ^^^^\n" +
			"   = hint: write `param X = VALUE` with an int, float or bool constant\n",
	},
	{
		"buffer d i32[KV]\n",
		"t.flex:1:10: error[E012]: expected `:` after `buffer d`, found `i32`\n" +
			" 1 | buffer d i32[KV]\n" +
			"   |          ^^^\n" +
			"   = hint: write `buffer d: f32[H]`: element type, then dimensions\n",
	},
	{
		"buffer d: i32 KV\n",
		"t.flex:1:15: error[E012]: expected `[` and the dimensions after `i32`, found `KV`\n" +
			" 1 | buffer d: i32 KV\n" +
			"   |               ^^\n" +
			"   = hint: write `buffer d: i32[KV]`, one extent per dimension\n",
	},
	{
		"mask m b\n",
		"t.flex:1:8: error[E012]: expected `(` and the parameters of mask `m`, found `b`\n" +
			" 1 | mask m b\n" +
			"   |        ^\n" +
			"   = hint: write `mask m(b, h, q, kv) = ...`\n",
	},
	{
		"mask m(b, h, q, kv) q >= kv\n",
		"t.flex:1:21: error[E012]: expected `=` or `{` to start the body of mask `m`, found `q`\n" +
			" 1 | mask m(b, h, q, kv) q >= kv\n" +
			"   |                     ^\n" +
			"   = hint: write `mask m(b, h, q, kv) = EXPR`, or a block `{ let ... ; EXPR }`\n",
	},
	{
		"attention a causal = true\n",
		"t.flex:1:13: error[E012]: expected `{` after `attention a`, found `causal`\n" +
			" 1 | attention a causal = true\n" +
			"   |             ^^^^^^\n" +
			"   = hint: write `attention a {`, then one `key = value` setting per line, then `}`\n",
	},
	{
		"attention a {\n    causal true\n}\n",
		"t.flex:2:12: error[E012]: expected `=` after setting `causal`, found keyword `true`\n" +
			" 2 |     causal true\n" +
			"   |            ^^^^\n" +
			"   = hint: write `causal = VALUE`\n",
	},
	{
		"mask m(b, h, q, kv) {\n    let d\n    d\n}\n",
		"t.flex:2:10: error[E012]: expected `=` after `let d`, found end of line\n" +
			" 2 |     let d\n" +
			"   |          ^\n" +
			"   = hint: write `let d = VALUE`\n",
	},
	{
		"buffer d: i32[KV] segments sorted\n",
		"t.flex:1:28: error[E013]: expected end of line after the declaration of buffer `d`, found `sorted`\n" +
			" 1 | buffer d: i32[KV] segments sorted\n" +
			"   |                            ^^^^^^\n" +
			"   = hint: after the dimensions only an optional property such as `segments` may follow\n",
	},
	{
		"mask m(b, h, q, kv) = q >= kv kv\n",
		"t.flex:1:31: error[E013]: expected end of line after the expression, found `kv`\n" +
			" 1 | mask m(b, h, q, kv) = q >= kv kv\n" +
			"   |                               ^^\n" +
			"   = hint: is an operator missing? Each declaration, setting and `let` ends at the end of its line\n",
	},
	{
		"attention a {\n    causal = true window = (1, 0)\n}\n",
		"t.flex:2:19: error[E013]: expected a new line or `;` before setting `window`\n" +
			" 2 |     causal = true window = (1, 0)\n" +
			"   |                   ^^^^^^\n" +
			"   = hint: put each setting on its own line\n",
	},
	{
		"mask m(b, h, q, kv) {\n    let d = 1 d\n}\n",
		"t.flex:2:15: error[E013]: expected a new line or `;` between statements\n" +
			" 2 |     let d = 1 d\n" +
			"   |               ^\n" +
			"   = hint: put each `let` and the result on its own line\n",
	},
	{
		"mask m(b, h, q, kv) {\n    let d = abs(q - kv)\n}\n",
		"t.flex:3:1: error[E014]: the body of mask `m` has no result expression\n" +
			" 3 | }\n" +
			"   | ^\n" +
			"   = hint: end the block with the mask's value, e.g. `q >= kv`\n",
	},
	{
		"mask m(b, h, q, kv) {\n    q\n    let d = 1\n}\n",
		"t.flex:2:5: error[E014]: only the last statement of a block may be an expression\n" +
			" 2 |     q\n" +
			"   |     ^\n" +
			"   = hint: bind it with `let NAME = ...`, or remove it\n",
	},
	{
		"param if = 1\n",
		"t.flex:1:7: error[E015]: `if` is a keyword and cannot be used as a name\n" +
			" 1 | param if = 1\n" +
			"   |       ^^\n" +
			"   = hint: choose another name, e.g. `if_`\n",
	},
	{
		"mask m(b, if, q, kv) = q\n",
		"t.flex:1:11: error[E015]: `if` is a keyword and cannot be used as a parameter name\n" +
			" 1 | mask m(b, if, q, kv) = q\n" +
			"   |           ^^\n" +
			"   = hint: choose another name, e.g. `if_`\n",
	},
	{
		"def make_mask(None):\n    def mask_mod(b, h, q_idx, kv_idx):\n        return q_idx >= kv_idx\n    return mask_mod\n",
		"t.flex:1:15: error[E015]: `None` is a keyword and cannot be used as a parameter name\n" +
			" 1 | def make_mask(None):\n" +
			"   |               ^^^^\n" +
			"   = hint: choose another name, e.g. `None_`; a parameter that may be None takes a default: `extra=None`\n",
	},
	{
		"mask m(W)(X)(b, h, q, kv) = q\n",
		"t.flex:1:13: error[E016]: mask `m` has 3 parameter lists; at most two are allowed\n" +
			" 1 | mask m(W)(X)(b, h, q, kv) = q\n" +
			"   |             ^^^^^^^^^^^^^\n" +
			"   = hint: a factory is `mask m(CONSTS)(b, h, q, kv)`\n",
	},
	{
		"mask m(b, h, q, kv) = q && kv\n",
		"t.flex:1:25: error[E017]: `&&` is not an operator here\n" +
			" 1 | mask m(b, h, q, kv) = q && kv\n" +
			"   |                         ^^\n" +
			"   = hint: write `and` (or `&` between masks)\n",
	},
	{
		"mask m(b, h, q, kv) = !q\n",
		"t.flex:1:23: error[E017]: `!` is not an operator here\n" +
			" 1 | mask m(b, h, q, kv) = !q\n" +
			"   |                       ^\n" +
			"   = hint: write `not x` (or `~m` for a mask), and `!=` for inequality\n",
	},
	// Issue 31: the graded messages, each saying what is wrong and how to fix it.
	{
		"def m(b, h, q_idx, kv_idx):\n    xs = [q_idx for i in range(3)]\n    return q_idx >= kv_idx\n",
		"t.flex:2:10: error[E011]: a list comprehension is not a value in maskc: a mod computes one value per (q, kv) pair\n" +
			" 2 |     xs = [q_idx for i in range(3)]\n" +
			"   |          ^\n" +
			"   = hint: write the loop out: `any`/`all` over a few values as a chain of `or`/`and`, a sum as `+` terms; a table of values is a `buffer`\n",
	},
	{
		"mask m(b, h, q, kv) = [q, kv]\n",
		"t.flex:1:23: error[E011]: a list is not a value in maskc: a mod computes one value per (q, kv) pair\n" +
			" 1 | mask m(b, h, q, kv) = [q, kv]\n" +
			"   |                       ^\n" +
			"   = hint: a table of values is a `buffer` read with an index, e.g. `buffer t: f32[H]` and `t[h]`\n",
	},
	{
		"atention a {\n    mask = causal\n}\n",
		"t.flex:1:1: error[E010]: expected a declaration, found `atention`\n" +
			" 1 | atention a {\n" +
			"   | ^^^^^^^^\n" +
			"   = hint: did you mean `attention`? a declaration starts with `param`, `buffer`, `mask`, `score`, `def` or `attention`\n",
	},
	{
		"def m(b, h, q_idx, kv_idx):\n    d: int = q_idx - kv_idx\n    return d >= 0\n",
		"t.flex:2:6: error[E012]: a local variable cannot be annotated: `d: ...`\n" +
			" 2 |     d: int = q_idx - kv_idx\n" +
			"   |      ^\n" +
			"   = hint: drop the annotation and write `d = ...`: a local's type is that of its value\n",
	},
}

func TestDiagnosticsRendered(t *testing.T) {
	for _, tt := range diagnosticCases {
		_, diags := parser.ParseFile("t.flex", []byte(tt.src))
		if got := diags.Render(); got != tt.want {
			t.Errorf("ParseFile(%q):\n got:\n%s\nwant:\n%s", tt.src, got, tt.want)
		}
	}
}

// limitCases are the diagnostics whose snippet is too long to write out:
// the header and the caret column are pinned instead.
var limitCases = []struct {
	name, src, header string
	caretCol          int
}{
	{"nesting", "param A = " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300) + "\n",
		"t.flex:1:267: error[E006]: brackets nested more than 256 deep", 267},
	{"prefix run", "param A = " + strings.Repeat("-", 300) + "1\n",
		"t.flex:1:267: error[E007]: more than 256 prefix operators in a row", 267},
	{"not run", "param A = " + strings.Repeat("not ", 300) + "x\n",
		"t.flex:1:1035: error[E007]: more than 256 prefix operators in a row", 1035},
	{"too many errors", strings.Repeat("param A =\n", parser.MaxErrors+5),
		"t.flex:101:1: error[E018]: more than 100 syntax errors; the rest of the file was not parsed", 1},
	{"file too large", "param A = 1\n" + strings.Repeat("#", parser.MaxFileSize) + "\n",
		"t.flex: error[E005]: file is 1048589 bytes; at most 1048576 (1 MiB) are accepted", 0},
}

func TestDiagnosticsLimits(t *testing.T) {
	for _, tt := range limitCases {
		_, diags := parser.ParseFile("t.flex", []byte(tt.src))
		if len(diags) == 0 {
			t.Errorf("%s: no diagnostics", tt.name)
			continue
		}
		d := diags[len(diags)-1]
		if d.Error() != tt.header || d.Hint == "" {
			t.Errorf("%s: got %q (hint %q), want %q", tt.name, d.Error(), d.Hint, tt.header)
		}
		if tt.caretCol > 0 {
			// The caret stands under the character at caretCol, in a
			// snippet cut to at most dsl.MaxSnippet columns (plus "...").
			lines := strings.Split(d.Render(), "\n")
			bar := strings.Index(lines[2], "| ") + 2
			caret := strings.Index(lines[2], "^") - bar
			shown := []rune(lines[1][bar:])
			srcLine := []rune(strings.SplitN(tt.src, "\n", 2)[0])
			if tt.name == "too many errors" {
				srcLine = []rune("param A =")
			}
			if len(shown) > dsl.MaxSnippet+6 || caret < 0 || caret >= len(shown) || shown[caret] != srcLine[tt.caretCol-1] {
				t.Errorf("%s: caret at %d of a %d-column snippet, want it under %q:\n%s\n%s", tt.name, caret, len(shown), srcLine[tt.caretCol-1], lines[1], lines[2])
			}
		}
	}
}

// TestEveryCodeCovered checks the code table against the tests: each code
// has a description and a test, and no test produces an unlisted code.
func TestEveryCodeCovered(t *testing.T) {
	seen := map[dsl.Code]bool{}
	check := func(src string) {
		_, diags := parser.ParseFile("t.flex", []byte(src))
		for _, d := range diags {
			if _, ok := parser.Codes[d.Code]; !ok {
				t.Errorf("%q: code %s is not in parser.Codes", src, d.Code)
			}
			if d.Severity != dsl.SeverityError || d.Message == "" || d.Hint == "" {
				t.Errorf("%q: %s lacks severity, message or hint", src, d.Code)
			}
			seen[d.Code] = true
		}
	}
	for _, tt := range diagnosticCases {
		check(tt.src)
	}
	for _, tt := range limitCases {
		check(tt.src)
	}
	// A code that is only ever a note: the import of a module .flex does
	// not mirror, read past.
	_, notes := parser.ParseFile("t.flex", []byte("from mymodels import helpers\n"))
	if len(notes) != 1 || notes[0].Severity != dsl.SeverityNote || notes[0].Code != parser.CodeImport || notes[0].Message == "" {
		t.Errorf("an import of an unknown module: %s", notes.Render())
	} else {
		seen[parser.CodeImport] = true
	}
	for code, desc := range parser.Codes {
		if !seen[code] {
			t.Errorf("code %s (%s) has no test", code, desc)
		}
		if (code < "E001" || code > "E019") && (code < "E070" || code > "E072") && code != "E079" && code != "E080" && code != "E081" || desc == "" {
			t.Errorf("code %s outside the parser's ranges E001-E019, E070-E072 and E079-E081, or undescribed", code)
		}
	}
}

// TestSemicolonSeparatesDefStatements: `d = ...; return d >= 0` is Python
// and parses (issue 31: "unexpected indent in def m").
func TestSemicolonSeparatesDefStatements(t *testing.T) {
	src := "def m(b, h, q_idx, kv_idx):\n    d = q_idx - kv_idx; return d >= 0\n"
	if _, diags := parser.ParseFile("t.flex", []byte(src)); len(diags) != 0 {
		t.Errorf("diagnostics:\n%s", diags.Render())
	}
}
