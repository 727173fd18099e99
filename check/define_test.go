package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
)

func TestParseDefine(t *testing.T) {
	tests := []struct {
		in, name, value, err string
	}{
		{in: "WINDOW=1024", name: "WINDOW", value: "1024"},
		{in: " CAP = 30.5 ", name: "CAP", value: "30.5"},
		{in: "ON=True", name: "ON", value: "True"},
		{in: "A=b=c", name: "A", value: "b=c"},
		{in: "WINDOW", err: `-D "WINDOW": want NAME=VALUE, e.g. -D WINDOW=1024`},
		{in: "=3", err: `-D "=3": "" is not a param name (letters, digits and _, not starting with a digit)`},
		{in: "1X=3", err: `-D "1X=3": "1X" is not a param name (letters, digits and _, not starting with a digit)`},
		{in: "W-1=3", err: `-D "W-1=3": "W-1" is not a param name (letters, digits and _, not starting with a digit)`},
		{in: "W=", err: `-D "W=": missing value after '='`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			name, value, err := ParseDefine(tt.in)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.name, name)
			assert.Equal(t, tt.value, value)
		})
	}
}

const defineSource = `param WINDOW = 128
param HALF = WINDOW // 2
param CAP = 30.0
param ON = True
mask m(b, h, q, kv) = q - kv <= HALF and ON
score s(score, b, h, q, kv) = CAP * tanh(score / CAP)
attention a {
    mask = m
    score = s
}
`

func TestDefines(t *testing.T) {
	tests := []struct {
		name    string
		defines map[string]string
		want    map[string]dsl.Value // param values after the override
		diag    string               // expected first diagnostic's one-line form, "" for none
	}{
		{"none", nil, map[string]dsl.Value{"WINDOW": dsl.Int(128), "HALF": dsl.Int(64), "CAP": dsl.Float(30), "ON": dsl.Bool(true)}, ""},
		{"int", map[string]string{"WINDOW": "4096"}, map[string]dsl.Value{"WINDOW": dsl.Int(4096), "HALF": dsl.Int(2048)}, ""},
		{"int hex and underscores", map[string]string{"WINDOW": "0x1_00"}, map[string]dsl.Value{"WINDOW": dsl.Int(256)}, ""},
		{"negative int", map[string]string{"WINDOW": "-3"}, map[string]dsl.Value{"HALF": dsl.Int(-2)}, ""},
		{"float from int", map[string]string{"CAP": "50"}, map[string]dsl.Value{"CAP": dsl.Float(50)}, ""},
		{"float", map[string]string{"CAP": "1e-2"}, map[string]dsl.Value{"CAP": dsl.Float(0.01)}, ""},
		{"bool words", map[string]string{"ON": "false"}, map[string]dsl.Value{"ON": dsl.Bool(false)}, ""},
		{"bool digit", map[string]string{"ON": "0"}, map[string]dsl.Value{"ON": dsl.Bool(false)}, ""},
		{"int given float", map[string]string{"WINDOW": "1.5"}, map[string]dsl.Value{"WINDOW": dsl.Int(128)},
			"test.flex:1:7: error[E044]: -D WINDOW=1.5 does not fit int param WINDOW: want an int literal such as 1024"},
		{"int leading zero", map[string]string{"WINDOW": "0128"}, nil,
			"test.flex:1:7: error[E044]: -D WINDOW=0128 does not fit int param WINDOW: want an int literal such as 1024"},
		{"int overflow", map[string]string{"WINDOW": "9223372036854775808"}, nil,
			"test.flex:1:7: error[E044]: -D WINDOW=9223372036854775808 does not fit int param WINDOW: want an int literal such as 1024"},
		{"bool given word", map[string]string{"ON": "yes"}, nil,
			"test.flex:4:7: error[E044]: -D ON=yes does not fit bool param ON: want true, false, True, False, 1 or 0"},
		{"float given word", map[string]string{"CAP": "big"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=big does not fit float param CAP: want a number such as 30.0"},
		{"float nan", map[string]string{"CAP": "nan"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=nan does not fit float param CAP: want a finite number, not nan"},
		{"float NaN", map[string]string{"CAP": "-NaN"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=-NaN does not fit float param CAP: want a finite number, not -NaN"},
		{"float underflow", map[string]string{"CAP": "1e-400"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=1e-400 does not fit float param CAP: 1e-400 is too small for a 64-bit float: it would be 0 (the smallest is 5e-324); write 0 for zero"},
		{"float overflow", map[string]string{"CAP": "1e400"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=1e400 does not fit float param CAP: 1e400 is beyond the 64-bit float range (the largest is about 1.8e308)"},
		{"float Infinity", map[string]string{"CAP": "Infinity"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=Infinity does not fit float param CAP: want a finite number, not Infinity (a param that means infinity is declared so: param NAME = inf)"},
		{"float inf", map[string]string{"CAP": "inf"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=inf does not fit float param CAP: want a finite number, not inf (a param that means infinity is declared so: param NAME = inf)"},
		{"float -inf", map[string]string{"CAP": "-inf"}, nil,
			"test.flex:3:7: error[E044]: -D CAP=-inf does not fit float param CAP: want a finite number, not -inf (a param that means infinity is declared so: param NAME = inf)"},
		{"float tiny", map[string]string{"CAP": "1e-30"}, map[string]dsl.Value{"CAP": dsl.Float(1e-30)}, ""},
		{"unknown", map[string]string{"WIDNOW": "3"}, nil,
			"test.flex: error[E043]: -D WIDNOW: no param WIDNOW is declared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := checkSource(t, defineSource, tt.defines)
			if tt.diag == "" {
				require.Empty(t, diags, diags.Render())
			} else {
				require.NotEmpty(t, diags)
				assert.Equal(t, tt.diag, diags[0].Error())
			}
			for name, v := range tt.want {
				require.NotNil(t, p.Param(name))
				assert.Equal(t, v, p.Param(name).Value, name)
				_, overridden := tt.defines[name]
				assert.Equal(t, overridden && tt.diag == "", p.Param(name).Overridden, name)
			}
		})
	}
}

// TestDefineFlowsIntoLowering checks that an override reaches the lowered
// masks and that a fold error after an override points at the use.
func TestDefineFlowsIntoLowering(t *testing.T) {
	p, diags := checkSource(t, defineSource, map[string]string{"WINDOW": "10", "ON": "1"})
	require.Empty(t, diags)
	assert.Equal(t, "q - kv <= 5 and True", fmtExpr(p.Attention("a").Mask.Expr))

	src := "param D = 2\nmask m(b, h, q, kv) = q % D == 0\n"
	_, diags = checkSource(t, src, map[string]string{"D": "0"})
	require.Len(t, diags, 1)
	assert.Equal(t, "test.flex:2:27: error[E037]: modulo by constant zero", diags[0].Error())
}
