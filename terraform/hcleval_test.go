package terraform

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// rule is a validation block or a precondition.
type rule struct {
	cond hcl.Expression
	msg  string
}

// variable is a variable block.
type variable struct {
	typ         cty.Type
	def         *cty.Value
	validations []rule
}

// module is a Terraform module read with HCL: its variables, locals and
// output preconditions, evaluated the way Terraform does for a plan.
type module struct {
	vars     map[string]*variable
	locals   map[string]hcl.Expression
	preconds []rule
	files    map[string]*hcl.File
}

var rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "variable", LabelNames: []string{"name"}}, {Type: "locals"},
	{Type: "output", LabelNames: []string{"name"}}, {Type: "terraform"},
	{Type: "module", LabelNames: []string{"name"}}, {Type: "provider", LabelNames: []string{"name"}},
	{Type: "resource", LabelNames: []string{"type", "name"}},
}}

var ruleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "condition", Required: true}, {Name: "error_message", Required: true}}}

// loadModule parses every .tf file of dir.
func loadModule(dir string) (*module, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no .tf files in %s: %v", dir, err)
	}
	m := &module{vars: map[string]*variable{}, locals: map[string]hcl.Expression{}, files: map[string]*hcl.File{}}
	p := hclparse.NewParser()
	for _, f := range files {
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			return nil, diags
		}
		m.files[filepath.Base(f)] = file
		content, _, diags := file.Body.PartialContent(rootSchema)
		if diags.HasErrors() {
			return nil, diags
		}
		if err := m.addBlocks(content.Blocks); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return m, nil
}

func (m *module) addBlocks(blocks hcl.Blocks) error {
	for _, b := range blocks {
		var err error
		switch b.Type {
		case "variable":
			err = m.addVariable(b)
		case "locals":
			attrs, diags := b.Body.JustAttributes()
			if diags.HasErrors() {
				return diags
			}
			for name, a := range attrs {
				m.locals[name] = a.Expr
			}
		case "output":
			rules, e := rulesOf(b.Body, "precondition", []hcl.AttributeSchema{{Name: "value"}, {Name: "description"}, {Name: "sensitive"}})
			m.preconds, err = append(m.preconds, rules...), e
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *module) addVariable(b *hcl.Block) error {
	schema := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
		Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}}}
	content, diags := b.Body.Content(schema)
	if diags.HasErrors() {
		return diags
	}
	v := &variable{typ: cty.DynamicPseudoType}
	if a, ok := content.Attributes["type"]; ok {
		if v.typ, diags = typeexpr.TypeConstraint(a.Expr); diags.HasErrors() {
			return diags
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		def, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		v.def = &def
	}
	for _, vb := range content.Blocks {
		r, err := ruleOf(vb.Body)
		if err != nil {
			return err
		}
		v.validations = append(v.validations, r)
	}
	m.vars[b.Labels[0]] = v
	return nil
}

func rulesOf(body hcl.Body, blockType string, attrs []hcl.AttributeSchema) ([]rule, error) {
	content, diags := body.Content(&hcl.BodySchema{Attributes: attrs, Blocks: []hcl.BlockHeaderSchema{{Type: blockType}}})
	if diags.HasErrors() {
		return nil, diags
	}
	var out []rule
	for _, b := range content.Blocks {
		r, err := ruleOf(b.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func ruleOf(body hcl.Body) (rule, error) {
	c, diags := body.Content(ruleSchema)
	if diags.HasErrors() {
		return rule{}, diags
	}
	msg, diags := c.Attributes["error_message"].Expr.Value(nil)
	if diags.HasErrors() {
		return rule{}, diags
	}
	return rule{cond: c.Attributes["condition"].Expr, msg: msg.AsString()}, nil
}

// result is one evaluation: the failed rules and the locals.
type result struct {
	failures []string
	locals   map[string]cty.Value
}

// eval evaluates the module for the inputs: the locals, the variables'
// validations, then (when every input is valid) the output preconditions.
func (m *module) eval(in map[string]cty.Value) (result, error) {
	vars := map[string]cty.Value{}
	for name, decl := range m.vars {
		v, ok := in[name]
		switch {
		case !ok && decl.def == nil:
			return result{}, fmt.Errorf("variable %s is required", name)
		case !ok:
			v = *decl.def
		}
		cv, err := convert.Convert(v, decl.typ)
		if err != nil {
			return result{}, fmt.Errorf("variable %s: %w", name, err)
		}
		vars[name] = cv
	}
	for name := range in {
		if _, ok := m.vars[name]; !ok {
			return result{}, fmt.Errorf("undeclared variable %s", name)
		}
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}, Functions: functions()}
	res := result{locals: map[string]cty.Value{}}
	// Validations may use constant locals (the unit table), so the locals
	// come first; those that need invalid inputs are left out.
	m.evalLocals(ctx, res.locals)
	for _, name := range sortedKeys(m.vars) {
		res.failures = append(res.failures, check(ctx, m.vars[name].validations)...)
	}
	if len(res.failures) == 0 {
		res.failures = check(ctx, m.preconds)
	}
	return res, nil
}

// evalLocals evaluates the locals in dependency order; a local whose
// expression fails (invalid input) is left out.
func (m *module) evalLocals(ctx *hcl.EvalContext, done map[string]cty.Value) {
	for progress := true; progress; {
		progress = false
		for name, expr := range m.locals {
			if _, ok := done[name]; ok || !depsDone(expr, done) {
				continue
			}
			ctx.Variables["local"] = cty.ObjectVal(done)
			v, diags := expr.Value(ctx)
			if diags.HasErrors() {
				v = cty.NilVal
			}
			done[name], progress = v, true
		}
	}
	for name, v := range done {
		if v == cty.NilVal {
			delete(done, name)
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(done)
}

func depsDone(expr hcl.Expression, done map[string]cty.Value) bool {
	for _, tr := range expr.Variables() {
		if tr.RootName() != "local" || len(tr) < 2 {
			continue
		}
		if attr, ok := tr[1].(hcl.TraverseAttr); ok {
			if v, ok := done[attr.Name]; !ok || v == cty.NilVal {
				return false
			}
		}
	}
	return true
}

// check returns the messages of the rules that do not hold; a condition
// that fails to evaluate fails, as in Terraform.
func check(ctx *hcl.EvalContext, rules []rule) []string {
	var out []string
	for _, r := range rules {
		v, diags := r.cond.Value(ctx)
		switch {
		case diags.HasErrors():
			out = append(out, r.msg+" (condition error: "+diags.Error()+")")
		case v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool:
			out = append(out, r.msg+" (condition not a known bool)")
		case v.False():
			out = append(out, r.msg)
		}
	}
	return out
}

// functions are the Terraform functions the modules use, from cty's
// standard library (which Terraform's are built on) and HCL's try/can.
func functions() map[string]function.Function {
	return map[string]function.Function{
		"alltrue": allTrueFunc, "can": tryfunc.CanFunc, "try": tryfunc.TryFunc,
		"contains": stdlib.ContainsFunc, "flatten": stdlib.FlattenFunc, "floor": stdlib.FloorFunc,
		"join": stdlib.JoinFunc, "length": stdlib.LengthFunc, "lookup": stdlib.LookupFunc,
		"merge": stdlib.MergeFunc, "regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc,
		"tonumber": stdlib.MakeToFunc(cty.Number), "tostring": stdlib.MakeToFunc(cty.String),
		"trimspace": stdlib.TrimSpaceFunc,
	}
}

// allTrueFunc is Terraform's alltrue: true when every element is true
// (and for an empty list).
var allTrueFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		for it := args[0].ElementIterator(); it.Next(); {
			_, v := it.Element()
			if !v.IsKnown() {
				return cty.UnknownVal(cty.Bool), nil
			}
			if v.IsNull() || v.False() {
				return cty.False, nil
			}
		}
		return cty.True, nil
	},
})

// stringMap turns a cty map or object of strings into a Go map.
func stringMap(v cty.Value) (map[string]string, error) {
	if v == cty.NilVal || v.IsNull() || !v.CanIterateElements() {
		return nil, fmt.Errorf("not a map: %#v", v)
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		s, err := convert.Convert(e, cty.String)
		if err != nil || s.IsNull() {
			return nil, fmt.Errorf("meta %s is not a string: %v", k.AsString(), err)
		}
		out[k.AsString()] = s.AsString()
	}
	return out, nil
}

// parseVars reads tfvars text (name = value lines) into values.
func parseVars(src string) (map[string]cty.Value, error) {
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "case.tfvars")
	if diags.HasErrors() {
		return nil, diags
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		return nil, diags
	}
	out := map[string]cty.Value{}
	for name, a := range attrs {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return nil, diags
		}
		out[name] = v
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
