package executor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenComparedInConstantTime: no source file of the SDK compares a
// token with == or != (other than against ""), which leaks the token's
// matching prefix length through response times; subtle.ConstantTimeCompare
// does not. Timing cannot be asserted reliably in a test, the code can.
func TestTokenComparedInConstantTime(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	mentionsToken := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && strings.Contains(strings.ToLower(id.Name), "token") {
				found = true
			}
			return !found
		})
		return found
	}
	isEmpty := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Value == `""`
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			b, ok := n.(*ast.BinaryExpr)
			if !ok || (b.Op != token.EQL && b.Op != token.NEQ) || isEmpty(b.X) || isEmpty(b.Y) {
				return true
			}
			if mentionsToken(b.X) && mentionsToken(b.Y) {
				t.Errorf("%s: token compared with %s; use subtle.ConstantTimeCompare", fset.Position(b.Pos()), b.Op)
			}
			return true
		})
	}
}
