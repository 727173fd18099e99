package check

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// ParseDefine splits "NAME=VALUE" (the argument of the CLI's -D flag) and
// reports a clear error for bad forms.
func ParseDefine(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("-D %q: want NAME=VALUE, e.g. -D WINDOW=1024", s)
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !isIdent(name) {
		return "", "", fmt.Errorf("-D %q: %q is not a param name (letters, digits and _, not starting with a digit)", s, name)
	}
	if value == "" {
		return "", "", fmt.Errorf("-D %q: missing value after '='", s)
	}
	return name, value, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// parseDefineValue reads the text of a -D override as a value of type t.
func parseDefineValue(text string, t dsl.Type) (dsl.Value, error) {
	switch t {
	case dsl.TypeBool:
		switch text {
		case "true", "True", "1":
			return dsl.Bool(true), nil
		case "false", "False", "0":
			return dsl.Bool(false), nil
		}
		return dsl.Value{}, fmt.Errorf("want true, false, True, False, 1 or 0")
	case dsl.TypeInt:
		i, err := parseIntLiteral(text)
		if err != nil {
			return dsl.Value{}, fmt.Errorf("want an int literal such as 1024")
		}
		return dsl.Int(i), nil
	case dsl.TypeFloat:
		if i, err := parseIntLiteral(text); err == nil {
			return dsl.Float(float64(i)), nil
		}
		// A -D value is a finite number literal. Infinity and nan are
		// refused: on a command line they are most often a computed value
		// gone wrong (Python prints an overflow as inf), and the Python
		// package refuses them too; a file that means infinity says so in
		// its declaration (param C = inf).
		lower := strings.ToLower(strings.TrimLeft(text, "+-"))
		if strings.HasPrefix(lower, "nan") {
			return dsl.Value{}, fmt.Errorf("want a finite number, not %s", text)
		}
		if strings.HasPrefix(lower, "inf") {
			return dsl.Value{}, fmt.Errorf("want a finite number, not %s (a param that means infinity is declared so: param NAME = inf)", text)
		}
		digits := strings.ReplaceAll(text, "_", "")
		f, err := strconv.ParseFloat(digits, 64)
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && !strings.ContainsAny(text, "xXpP") {
			return dsl.Value{}, fmt.Errorf("%s is beyond the 64-bit float range (the largest is about 1.8e308)", text)
		}
		if err != nil || strings.ContainsAny(text, "xXpP") {
			return dsl.Value{}, fmt.Errorf("want a number such as 30.0")
		}
		if dsl.FloatUnderflows(digits, f) {
			return dsl.Value{}, fmt.Errorf("%s is too small for a 64-bit float: it would be 0 (the smallest is 5e-324); write 0 for zero", text)
		}
		return dsl.Float(f), nil
	}
	return dsl.Value{}, fmt.Errorf("the param has no valid value to override")
}

// parseIntLiteral accepts Python-style int literals: an optional sign,
// decimal digits without a leading zero, 0x/0o/0b prefixes, and underscores.
func parseIntLiteral(text string) (int64, error) {
	body := strings.TrimLeft(text, "+-")
	if len(text)-len(body) > 1 {
		return 0, fmt.Errorf("bad int")
	}
	if len(body) > 1 && body[0] == '0' && body[1] >= '0' && body[1] <= '9' {
		return 0, fmt.Errorf("leading zero")
	}
	return strconv.ParseInt(text, 0, 64)
}
