package format_test

import (
	"fmt"

	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

func ExampleSource() {
	f, _ := parser.ParseFile("m.flex", []byte("mask m(b,h,q,kv)=q>=kv   # causal\nattention a{mask=m;dtype=bf16}\n"))
	fmt.Print(string(format.Source(f)))
	// Output:
	// mask m(b, h, q, kv) = q >= kv  # causal
	// attention a {
	//     mask = m
	//     dtype = bf16
	// }
}

func ExampleExpr() {
	e, _ := parser.ParseExpr("e", "abs(q-kv)<=2048 and (q-kv)%2==0")
	fmt.Println(format.Expr(e))
	// Output:
	// abs(q - kv) <= 2048 and (q - kv) % 2 == 0
}
