package configadmin

import (
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/config"
)

// rawDoc is the configuration document being edited.
type rawDoc struct {
	root    *config.Object
	servers *config.Object // the mcpServers object inside root
}

// loadDoc reads the raw document. A missing file is an empty document
// (mcpServers and skills, as DeerFlow creates it).
func loadDoc(data []byte, exists bool) (*rawDoc, error) {
	if !exists {
		root := config.NewObject()
		servers := config.NewObject()
		root.Set("mcpServers", servers)
		root.Set("skills", config.NewObject())
		return &rawDoc{root: root, servers: servers}, nil
	}
	if !utf8.Valid(data) {
		return nil, invalidConfig("Extensions configuration is not valid JSON: the file is not UTF-8 text")
	}
	tree, err := config.ParseJSON(data)
	if err != nil {
		return nil, invalidConfig("Extensions configuration is not valid JSON: %s", apierror.JSONProblem(err))
	}
	root, ok := tree.(*config.Object)
	if !ok {
		return nil, invalidConfig("Extensions configuration must be a JSON object")
	}
	// The loader reads DeerFlow's field name when the alias is absent; edit
	// the key the file uses.
	key := "mcpServers"
	if _, ok := root.Get(key); !ok {
		if _, ok := root.Get("mcp_servers"); ok {
			key = "mcp_servers"
		}
	}
	v, _ := root.Get(key)
	switch t := v.(type) {
	case *config.Object:
		return &rawDoc{root: root, servers: t}, nil
	case nil: // absent or null: no servers yet
		servers := config.NewObject()
		root.Set(key, servers)
		return &rawDoc{root: root, servers: servers}, nil
	default:
		return nil, invalidConfig("`%s` must be a JSON object", key)
	}
}

// storedServer returns the raw entry name, which must be an object.
func (d *rawDoc) storedServer(name string) (*config.Object, bool, error) {
	v, ok := d.servers.Get(name)
	if !ok {
		return nil, false, nil
	}
	o, isObj := v.(*config.Object)
	if !isObj {
		return nil, true, invalidConfig("mcpServers.%s: must be an object, got %s", name, config.JSONType(v))
	}
	return o, true, nil
}

// replaceServers swaps the servers object for a new one in the same place.
func (d *rawDoc) replaceServers(servers *config.Object) {
	for _, k := range d.root.Keys() {
		if v, _ := d.root.Get(k); v == any(d.servers) {
			d.root.Set(k, servers)
			d.servers = servers
			return
		}
	}
	d.root.Set("mcpServers", servers)
	d.servers = servers
}

func rawGet(o *config.Object, key string) any {
	v, _ := o.Get(key)
	return v
}

// serverEnabled is the raw "enabled" (true when absent, as the loader reads it).
func serverEnabled(o *config.Object) bool {
	if b, ok := rawGet(o, "enabled").(bool); ok {
		return b
	}
	return true
}
