package codegen

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/parser"
)

// escapeSeeds are comments and file names that broke out of generated
// comments and #line directives before they were escaped: a CR ending the
// comment for the preprocessor, a trailing backslash splicing the next line
// into it, a trigraph backslash, newlines and quotes in file names,
// terminal escapes and bidirectional overrides.
var escapeSeeds = []struct{ comment, name string }{
	{"plain", "m.flex"},
	{"ends in a backslash \\", "back\\slash.flex"},
	{"trigraph ??/", "tri??/.flex"},
	{"cr \r#define maskc_py_floormod_pos(a, b) 0", "f.flex"},
	{"cr \r#define kv q", "g.flex"},
	{"unicode é 中 😀", "new\nline\"quote.flex"},
	{"esc \x1b[2J bidi \u202e", "bidi\u202e\r.flex"},
}

// preprocessed runs hipcc's preprocessor on the generated part of the
// attention block of a file with mask expression mask and holding comment
// three times, named name, and returns its tokens without line markers; ok
// is false when the front end or the generator refuses the file (which is
// then safe: nothing is generated).
func preprocessed(t *testing.T, hipcc, mask, comment, name string) (out string, ok bool) {
	t.Helper()
	text := "# " + comment + "\nmask m(b, h, q, kv) = " + mask + "  # " + comment + "\nattention a {\n    mask = m  # " + comment + "\n}\n"
	file, diags := parser.ParseFile(name, []byte(text))
	if diags.HasErrors() {
		return "", false
	}
	p, diags := check.Check(file, check.Options{})
	if diags.HasErrors() || len(p.Attentions) != 1 {
		return "", false // a mask the checker refuses generates nothing
	}
	k, diags := Generate(p, p.Attentions[0], Options{SourceName: name})
	if diags.HasErrors() {
		return "", false
	}
	path := filepath.Join(t.TempDir(), "part.cpp")
	if err := os.WriteFile(path, []byte(k.Generated), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hipcc, "-E", "-x", "c++", "--offload-arch=gfx90a", "--cuda-device-only", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hipcc -E: %v\n%s", err, stderr.String())
	}
	var lines []string
	for _, ln := range strings.Split(stdout.String(), "\n") {
		if ln = strings.TrimSpace(ln); ln != "" && !strings.HasPrefix(ln, "#") {
			lines = append(lines, ln)
		}
	}
	return strings.Join(lines, "\n"), true
}

// FuzzPreprocessedMask compiles a program (an arbitrary mask expression)
// whose comments and file name are arbitrary through hipcc's preprocessor
// (hipcc -E): whatever they hold, the preprocessed generated code is token
// for token the code generated for the same mask with a harmless comment
// and name, i.e. the intended mask; nothing copied from the source or the
// name became code, and nothing of the code was swallowed into a comment.
//
//	go test ./codegen -run '^$' -fuzz FuzzPreprocessedMask -fuzztime 20s
//
// Outside CI a missing hipcc skips the target; with CI=true it fails.
func FuzzPreprocessedMask(f *testing.F) {
	hipcc, err := exec.LookPath("hipcc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			f.Fatal("hipcc is needed: apt-get install hipcc")
		}
		f.Skip("hipcc is needed: apt-get install hipcc")
	}
	masks := []string{"q - 3 <= kv <= q", "kv < 16 or q // 8 == kv // 8", "abs(q - kv) <= 2 * (h + 1)",
		"(q - kv) % 4 == 0 and q >= kv"}
	for i, s := range escapeSeeds {
		f.Add(masks[i%len(masks)], s.comment, s.name)
	}
	want := map[string]string{} // by mask
	f.Fuzz(func(t *testing.T, mask, comment, name string) {
		if name == "" || strings.ContainsRune(name, 0) || strings.ContainsAny(mask, "#\r\n") {
			return // not a file name, or a mask that is not one line of code
		}
		w, seen := want[mask]
		if !seen {
			w, _ = preprocessed(t, hipcc, mask, "harmless", "ref.flex")
			want[mask] = w
		}
		if w == "" {
			return // the mask is refused
		}
		got, ok := preprocessed(t, hipcc, mask, comment, name)
		if ok && got != w {
			t.Fatalf("mask %q, comment %q, file %q: the preprocessed code differs from the intended mask:\n%s\n---- want\n%s", mask, comment, name, got, w)
		}
	})
}

func TestEscapes(t *testing.T) {
	for _, tc := range []struct{ in, comment, str string }{
		{"plain", "plain", `"plain"`},
		{"a \\", `a \x5c`, `"a \\"`},
		{"a \\  ", `a \x5c`, `"a \\  "`},
		{"x ??/ y", `x ?\x3f/ y`, `"x ?\077/ y"`},
		{"cr\r#define", `cr\x0d#define`, `"cr\015#define"`},
		{"nl\n\"q\"", `nl\x0a"q"`, `"nl\012\"q\""`},
		{"bidi\u202e é", `bidi\u202e é`, `"bidi\342\200\256 é"`},
		{"bad\xff", `bad\xff`, `"bad\377"`},
	} {
		if got := cComment(tc.in); got != tc.comment {
			t.Errorf("cComment(%q) = %q, want %q", tc.in, got, tc.comment)
		}
		if got := cString(tc.in); got != tc.str {
			t.Errorf("cString(%q) = %q, want %q", tc.in, got, tc.str)
		}
	}
}
