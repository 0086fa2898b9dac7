package processor_test

import (
	"context"
	"testing"

	"chatd/internal/processor"
	"chatd/internal/processor/echo"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type named struct{ description string }

func (n named) Describe() string { return n.description }
func (n named) Process(context.Context, processor.Input, processor.Emit) (processor.Output, error) {
	return processor.Output{}, nil
}

func TestRegistry(t *testing.T) {
	reg, err := processor.NewRegistry(map[string]processor.Processor{"echo": echo.New(), "alpha": named{"a"}}, "echo")
	require.NoError(t, err)
	assert.Equal(t, "echo", reg.Default())
	assert.Equal(t, []string{"alpha", "echo"}, reg.Names())
	p, err := reg.Get("alpha")
	require.NoError(t, err)
	assert.Equal(t, "a", p.Describe())
	_, err = reg.Get("oracle")
	assert.ErrorIs(t, err, processor.ErrUnknown)
}

func TestRegistryRejectsBadConfiguration(t *testing.T) {
	_, err := processor.NewRegistry(nil, "echo")
	assert.Error(t, err)
	_, err = processor.NewRegistry(map[string]processor.Processor{"echo": echo.New()}, "demo")
	assert.Error(t, err)
}

type reader struct {
	named
	window int
}

func (r reader) HistoryWindow() int { return r.window }

func TestRegistryWindows(t *testing.T) {
	reg, err := processor.NewRegistry(map[string]processor.Processor{
		"echo":   echo.New(),
		"full":   named{"reads the configured window"},
		"short":  reader{window: 3},
		"greedy": reader{window: 500},
	}, "echo")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"echo": 0, "short": 3, "greedy": 50}, reg.Windows(50),
		"processors that limit their history, capped at the configured window")
}
