package agent

import (
	"fmt"
	"net/http"
	"time"

	"go.yaml.in/yaml/v3"

	"chatd/internal/processor/remote"
)

// FileRemote is an entry of remote_processors: a processor in another
// process, answering turns over HTTP. Config holds its settings, with the
// signing secret read from the variable named by secret_env.
type FileRemote struct {
	Name string
	// Line is where the entry starts in the file.
	Line   int
	Config remote.Config
}

func (p *fileParser) remote(n *yaml.Node, field string) FileRemote {
	r := FileRemote{Line: n.Line}
	p.object(n, field, []string{"name", "url"}, func(key string, v *yaml.Node, field string) bool {
		return p.remoteField(&r, key, v, field)
	})
	return r
}

// remoteField reads one field of a remote processor; false for a field
// remote processors do not have.
func (p *fileParser) remoteField(r *FileRemote, key string, v *yaml.Node, field string) bool {
	switch key {
	case "name":
		r.Name = p.ident(v, field)
		r.Config.Name = r.Name
	case "description":
		r.Config.Description = p.str(v, field)
	case "url":
		if r.Config.URL = p.str(v, field); v.Kind == yaml.ScalarNode {
			if err := remote.CheckURL(r.Config.URL); err != nil {
				p.errorf(v, field, "%v", err)
			}
		}
	case "secret_env":
		if env := p.str(v, field); env != "" {
			if r.Config.Secret = p.getenv(env); r.Config.Secret == "" {
				p.errorf(v, field, "the variable %s is not set", env)
			}
		}
	case "headers":
		r.Config.Headers = p.headers(v, field)
	case "timeout":
		r.Config.Timeout = p.duration(v, field)
	default:
		return false
	}
	return true
}

// headers reads a remote processor's headers, each checked where it is
// written. Header names ignore case, so X-Site and x-site are one header.
func (p *fileParser) headers(n *yaml.Node, field string) map[string]string {
	out := map[string]string{}
	seen := map[string]bool{}
	p.fields(n, field, func(key string, v *yaml.Node, field string) bool {
		value := p.str(v, field)
		if err := remote.CheckHeader(key, value); err != nil {
			p.errorf(v, field, "%v", err)
		}
		if canonical := http.CanonicalHeaderKey(key); seen[canonical] {
			p.errorf(v, field, "appears more than once (header names ignore case)")
		} else {
			seen[canonical] = true
		}
		out[key] = value
		return true
	})
	return out
}

func (p *fileParser) duration(n *yaml.Node, field string) time.Duration {
	s := p.str(n, field)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.errorf(n, field, "%q: want a duration such as 30s or 2m", s)
		return 0
	}
	if d <= 0 {
		p.errorf(n, field, "must be positive")
		return 0
	}
	return d
}

// checkRemoteNames reports a remote processor named like an agent of the
// file: both are processors, and one name can enable only one of them.
func (p *fileParser) checkRemoteNames(f *File, list *yaml.Node) {
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) != len(f.RemoteProcessors) {
		return
	}
	agents := map[string]int{}
	for i, a := range f.Agents {
		if _, dup := agents[a.Name]; !dup && a.Name != "" {
			agents[a.Name] = i
		}
	}
	for i, r := range f.RemoteProcessors {
		if j, dup := agents[r.Name]; dup {
			p.errorf(list.Content[i], fmt.Sprintf("remote_processors[%d].name", i), "%q is already the name of agents[%d]", r.Name, j)
		}
	}
}
