package parser_test

import (
	"fmt"

	"github.com/maskc/maskc/parser"
)

func ExampleParseFile() {
	src := "param WINDOW = 1024\nmask local(b, h, q, kv) = q >= kv and q - kv <=\n"
	f, diags := parser.ParseFile("local.flex", []byte(src))
	fmt.Println(len(f.Decls), "declaration parsed")
	fmt.Print(diags.Render())
	// Output:
	// 1 declaration parsed
	// local.flex:2:48: error[E011]: expected an expression after `<=`, found end of line
	//  2 | mask local(b, h, q, kv) = q >= kv and q - kv <=
	//    |                                                ^
	//    = hint: complete the expression; to continue it on the next line, put it in parentheses
}

func ExampleParseExpr() {
	e, _ := parser.ParseExpr("-D", "0 <= q - kv <= W")
	fmt.Printf("%T\n", e)
	// Output:
	// *dsl.CompareExpr
}
