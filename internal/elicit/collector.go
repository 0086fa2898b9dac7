package elicit

import (
	"fmt"
	"unicode/utf8"

	"chatd/internal/blocks"
)

// collector gathers violations, allocating only when there is one, so that
// validating a good result costs no allocation for errors.
type collector struct {
	ve *blocks.ValidationError
}

func (c *collector) add(field, detail string) {
	if c.ve == nil {
		c.ve = &blocks.ValidationError{}
	}
	c.ve.Add(field, detail)
}

func (c *collector) merge(err error) {
	if err == nil {
		return
	}
	if c.ve == nil {
		c.ve = &blocks.ValidationError{}
	}
	c.ve.Merge(err)
}

func (c *collector) len() int {
	if c.ve == nil {
		return 0
	}
	return len(c.ve.Errors)
}

// err returns the violations as a *blocks.ValidationError, or a nil error.
func (c *collector) err() error {
	if c.ve == nil {
		return nil
	}
	return c.ve
}

// quote quotes a schema- or user-supplied string for an error detail,
// shortened so that a detail stays a readable line.
func quote(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q…", string(r[:max]))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
