package blocks

import (
	"strings"
)

// FieldError is one violation in client input: Field is the path of the
// offending value (content_blocks[2].resource.blob, or a property name such
// as email for elicitation content) and Detail says what is wrong with it.
// The API returns these to clients as they are.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Detail
	}
	return e.Field + ": " + e.Detail
}

// ValidationError carries every violation found in one piece of input, so a
// client can fix them all at once rather than one per request.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

// Add records one violation.
func (e *ValidationError) Add(field, detail string) {
	e.Errors = append(e.Errors, FieldError{Field: field, Detail: detail})
}

// Merge appends the violations of err when it is a *ValidationError or a
// FieldError, and a field-less violation otherwise.
func (e *ValidationError) Merge(err error) {
	switch v := err.(type) {
	case nil:
	case *ValidationError:
		e.Errors = append(e.Errors, v.Errors...)
	case FieldError:
		e.Errors = append(e.Errors, v)
	default:
		e.Errors = append(e.Errors, FieldError{Detail: err.Error()})
	}
}

// Err returns e as an error when it holds violations, and nil otherwise.
func (e *ValidationError) Err() error {
	if len(e.Errors) == 0 {
		return nil
	}
	return e
}

// JoinPath joins a parent path and a child segment: JoinPath("content_blocks[2]",
// "resource") is "content_blocks[2].resource"; an index segment such as "[3]"
// is appended without a dot.
func JoinPath(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	case strings.HasPrefix(child, "["):
		return parent + child
	default:
		return parent + "." + child
	}
}
