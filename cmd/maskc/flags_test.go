package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		args     []string
		wantPos  []string
		wantMask string
	}{
		{[]string{"a.flex", "--mask", "m"}, []string{"a.flex"}, "m"},
		{[]string{"--mask", "m", "a.flex", "b.flex"}, []string{"a.flex", "b.flex"}, "m"},
		{[]string{"a.flex", "--mask=m", "b.flex"}, []string{"a.flex", "b.flex"}, "m"},
		{[]string{"--", "-weird.flex"}, []string{"-weird.flex"}, ""},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		mask := fs.String("mask", "", "")
		pos, err := parseInterleaved(fs, tt.args)
		require.NoError(t, err, tt.args)
		assert.Equal(t, tt.wantPos, pos, tt.args)
		assert.Equal(t, tt.wantMask, *mask, tt.args)
	}
}

func TestDefineFlags(t *testing.T) {
	d := defineFlags{}
	require.NoError(t, d.Set("W=12"))
	assert.Equal(t, "12", d["W"])
	assert.Error(t, d.Set("W=13"), "defined twice")
	assert.Error(t, d.Set("=3"))
}
