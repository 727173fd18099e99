package lsp

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
)

// TestEditorFilesAgree keeps editors/ in step with the language: the VS
// Code manifest names the grammar's scope and the language id the README
// documents, and the TextMate grammar knows every keyword, built-in and
// attention setting.
func TestEditorFilesAgree(t *testing.T) {
	var grammar struct {
		ScopeName  string `json:"scopeName"`
		Repository map[string]struct {
			Match    string `json:"match"`
			Patterns []struct {
				Match string `json:"match"`
				Name  string `json:"name"`
			} `json:"patterns"`
		} `json:"repository"`
	}
	readJSON(t, "../editors/textmate/flex.tmLanguage.json", &grammar)
	var manifest struct {
		Main        string `json:"main"`
		Contributes struct {
			Languages []struct {
				ID string `json:"id"`
			} `json:"languages"`
			Grammars []struct {
				Language  string `json:"language"`
				ScopeName string `json:"scopeName"`
			} `json:"grammars"`
		} `json:"contributes"`
	}
	readJSON(t, "../editors/vscode/package.json", &manifest)

	if len(manifest.Contributes.Languages) != 1 || manifest.Contributes.Languages[0].ID != "maskc-flex" {
		t.Errorf("VS Code languages = %+v, want the one id maskc-flex", manifest.Contributes.Languages)
	}
	if g := manifest.Contributes.Grammars; len(g) != 1 || g[0].Language != "maskc-flex" || g[0].ScopeName != grammar.ScopeName {
		t.Errorf("VS Code grammars = %+v, want maskc-flex with scope %s", g, grammar.ScopeName)
	}
	if _, err := os.Stat("../editors/vscode/" + manifest.Main); err != nil {
		t.Errorf("VS Code main: %v", err)
	}

	// Every word the grammar must highlight is matched by the pattern
	// meant for it.
	pattern := func(rule, name string) *regexp.Regexp {
		for _, p := range grammar.Repository[rule].Patterns {
			if p.Name == name {
				return regexp.MustCompile(withoutLookaround(p.Match))
			}
		}
		if name == "" {
			return regexp.MustCompile(withoutLookaround(grammar.Repository[rule].Match))
		}
		t.Fatalf("grammar has no %s pattern in %s", name, rule)
		return nil
	}
	builtin := pattern("expression", "support.function.builtin.maskc-flex")
	for name := range dsl.Builtins {
		for _, spelling := range []string{name + "(", "torch." + name + "("} {
			if m := builtin.FindString(spelling); m != spelling[:len(spelling)-1] {
				t.Errorf("built-in %q: grammar matches %q", spelling, m)
			}
		}
	}
	keyword := pattern("expression", "keyword.other.maskc-flex")
	logical := pattern("expression", "keyword.operator.logical.maskc-flex")
	boolean := pattern("expression", "constant.language.boolean.maskc-flex")
	for kw := range keywords {
		if !keyword.MatchString(kw) && !logical.MatchString(kw) && !boolean.MatchString(kw) {
			t.Errorf("keyword %q is not highlighted", kw)
		}
	}
	setting := pattern("setting", "")
	for _, key := range check.SettingKeys() {
		if !setting.MatchString("    " + key + " = 1") {
			t.Errorf("setting %q is not highlighted", key)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// withoutLookaround deletes the lookahead groups `(?=...)` and `(?!...)`
// of an Oniguruma pattern, which Go's regexp lacks, so that the rest can be
// tested.
func withoutLookaround(p string) string {
	var out []byte
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			out = append(out, p[i], p[i+1])
			i++
			continue
		}
		if p[i] == '(' && i+2 < len(p) && p[i+1] == '?' && (p[i+2] == '=' || p[i+2] == '!') {
			depth := 0
			for ; i < len(p); i++ {
				switch {
				case p[i] == '\\':
					i++
				case p[i] == '(':
					depth++
				case p[i] == ')':
					depth--
				}
				if depth == 0 {
					break
				}
			}
			continue
		}
		out = append(out, p[i])
	}
	return string(out)
}
