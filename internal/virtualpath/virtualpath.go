// Package virtualpath translates host paths in stdio tool results into the
// paths an agent knows, /mnt/user-data/...: an absolute reference is
// rewritten when it lies (symlinks followed) inside the thread's user-data
// folder, whether it names a file, a directory or nothing yet; a relative one
// only when it exists. Files are never copied. It also finds the files a call
// created or changed in the workspace.
package virtualpath

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Prefix is the agent-visible root of a thread's user data.
const Prefix = "/mnt/user-data"

// MetaChangedFiles is the result _meta key listing files a call created or
// changed (as virtual paths).
const MetaChangedFiles = "antler/changed_files"

// excluded folders are skipped at any depth when looking for changed files:
// the host's own .mcp, version control, caches and dependency trees.
var excluded = map[string]bool{
	".mcp": true, ".git": true, ".hg": true, ".svn": true, ".cache": true, ".next": true,
	".venv": true, ".browser-frames": true, ".tool-results": true, "node_modules": true, "__pycache__": true,
}

// maxFiles bounds a snapshot, counting the folders walked as well as the
// files recorded; a larger workspace is not tracked (an agent could
// otherwise make every call walk an unbounded tree of empty folders).
const maxFiles = 20000

// Stamp is a file's modification time and size.
type Stamp struct {
	ModTime int64
	Size    int64
}

// Scan records the regular files under dir (excluded folders skipped).
// It returns nil when dir holds more than maxFiles files and folders.
//
// It is a call's path (twice) where the workspace cannot be watched (see
// Watcher), so it reads each folder once, unsorted, and stats only regular
// files: a folder costs an open, its getdents and a close, a file one lstat.
func Scan(dir string) map[string]Stamp {
	out := map[string]Stamp{}
	info, err := os.Lstat(dir)
	if err != nil {
		return out
	}
	if !info.IsDir() {
		if info.Mode().IsRegular() {
			out[dir] = stampOf(info)
		}
		return out
	}
	w := walker{out: out}
	if !w.walk(dir) {
		return nil
	}
	return out
}

// walker is one Scan's traversal state.
type walker struct {
	out  map[string]Stamp
	dirs int
}

// walk records dir's regular files and descends into its folders, skipping
// unreadable entries; it reports false once the bound is passed.
func (w *walker) walk(dir string) bool {
	if w.dirs++; w.dirs+len(w.out) > maxFiles {
		return false
	}
	f, err := os.Open(dir)
	if err != nil {
		return true
	}
	entries, _ := f.ReadDir(-1) // what was read before an error is kept
	f.Close()
	for _, d := range entries {
		p := filepath.Join(dir, d.Name())
		switch {
		case d.IsDir():
			if excluded[d.Name()] {
				continue
			}
			if !w.walk(p) {
				return false
			}
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				continue
			}
			w.out[p] = stampOf(info)
			if w.dirs+len(w.out) > maxFiles {
				return false
			}
		}
	}
	return true
}

func stampOf(info fs.FileInfo) Stamp {
	return Stamp{ModTime: info.ModTime().UnixNano(), Size: info.Size()}
}

// Changed lists the files under dir created or modified since before
// (deleted files are not reported), sorted.
func Changed(dir string, before map[string]Stamp) []string {
	if before == nil {
		return nil
	}
	var out []string
	for p, st := range Scan(dir) {
		if old, ok := before[p]; !ok || old != st {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// Translator rewrites references for one thread.
type Translator struct {
	root  string // resolved user-data root (see resolveRoots)
	given string // the root as given (may be a symlink's spelling)
	cwd   string // the server's working directory, for relative paths
	rcwd  string // cwd with symlinks resolved (see resolveRoots)
	// resolved is set once root and rcwd are: they are resolved on the
	// first reference, so a result naming no path costs no lookups.
	resolved bool
	names    map[string]string
	memo     map[string]string
	// named collects the virtual paths written into a result; with
	// onlyNamed set (a call that overlapped another in its workspace) the
	// result lists only the changed files it names.
	named     map[string]bool
	onlyNamed bool
}

// NewTranslator returns a translator for the user-data folder root. changed
// lists files the call touched (absolute host paths): their bare file names
// are rewritten too when unambiguous.
func NewTranslator(root, cwd string, changed []string) *Translator {
	// The maps are made when first written: most calls translate nothing.
	t := &Translator{given: filepath.Clean(root), cwd: cwd}
	if len(changed) == 0 {
		return t
	}
	candidates := map[string]map[string]bool{}
	for _, p := range changed {
		v, ok := t.Ref(p)
		base := filepath.Base(p)
		if !ok || !bareName(base) {
			continue
		}
		if candidates[base] == nil {
			candidates[base] = map[string]bool{}
		}
		candidates[base][v] = true
	}
	t.names = map[string]string{}
	for base, vs := range candidates {
		if len(vs) == 1 {
			for v := range vs {
				t.names[base] = v
			}
		}
	}
	return t
}

// markNamed records that the result names v.
func (t *Translator) markNamed(v string) {
	if t.named == nil {
		t.named = map[string]bool{}
	}
	t.named[v] = true
}

// Ref translates one reference: a file:// URI or a path. An absolute one is
// translated when it lies inside the user-data folder once symlinks are
// followed, existing or not (a path the call is about to create, or one an
// error says is missing); a relative one, resolved against the server's
// working directory, only when it exists and is neither that directory nor
// one of its parents, so ordinary words with a slash stay as they are. Anything
// outside the folder is never translated.
func (t *Translator) Ref(ref string) (string, bool) {
	if ref == "" || len(ref) > 4096 || strings.IndexByte(ref, 0) >= 0 {
		return "", false
	}
	t.resolveRoots()
	p := ref
	if strings.HasPrefix(ref, "file://") {
		u, err := url.Parse(ref)
		// An authority other than localhost is not this machine, and in
		// file://relative/x it is the start of a relative path: ignore both.
		if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" || !filepath.IsAbs(u.Path) {
			return "", false
		}
		p = u.Path
	} else if strings.Contains(ref, "://") {
		return "", false
	}
	var resolved string
	if !filepath.IsAbs(p) {
		if t.cwd == "" {
			return "", false
		}
		r, err := filepath.EvalSymlinks(filepath.Join(t.cwd, p))
		if err != nil || isWithin(t.rcwd, r) {
			return "", false
		}
		resolved = r
	} else if r, err := filepath.EvalSymlinks(p); err == nil {
		resolved = r
	} else {
		// A path that does not exist is only looked at under the root, so
		// text full of paths elsewhere costs one lookup per path.
		if c := filepath.Clean(p); !isWithin(c, t.root) && !isWithin(c, t.given) {
			return "", false
		}
		if resolved = resolve(p); resolved == "" {
			return "", false
		}
	}
	if !isWithin(resolved, t.root) {
		return "", false
	}
	rel, _ := filepath.Rel(t.root, resolved)
	if rel == "." {
		return Prefix, true
	}
	return Prefix + "/" + filepath.ToSlash(rel), true
}

// resolveRoots resolves the root and the working directory once, on the
// first reference: symlink lookups are most of a call's translation cost
// when its result names no path at all.
func (t *Translator) resolveRoots() {
	if t.resolved {
		return
	}
	t.resolved = true
	if r, err := filepath.EvalSymlinks(t.given); err == nil {
		t.root = r
	} else {
		t.root = t.given
	}
	if t.cwd != "" {
		t.rcwd = resolve(t.cwd)
	}
}

// resolve follows the symlinks of p. A path that does not exist resolves
// through its longest existing ancestor, with the rest kept as written. It
// is "" when such a path holds ".." or a symlink on the way is dangling:
// where either leads cannot be known.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return ""
	}
	dir, rest := filepath.Clean(p), ""
	for {
		if _, err := os.Lstat(dir); err == nil {
			r, err := filepath.EvalSymlinks(dir)
			if err != nil {
				return ""
			}
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// isWithin reports whether p is dir or lies inside it.
func isWithin(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// pathToken is DeerFlow's Python path pattern with Python's Unicode meaning of \w
// and \s spelled out (Go's are ASCII-only).
var pathToken = regexp.MustCompile(`(?:file://)?/[^\s\v\x1c-\x1f\x85\p{Z}'"<>|*?]+|(?:\.{0,2}/|[\p{L}\p{N}_.-]+/)[^\s\v\x1c-\x1f\x85\p{Z}'"<>|*?]+`)

const trailing = ".,;:!?)]}>\"'`"

// Text rewrites the path-like tokens of free text that resolve inside the
// user-data folder, then unambiguous bare names of changed files outside the
// paths just written (a decoded file URI may hold a space).
func (t *Translator) Text(s string) string {
	s, written := t.paths(s)
	return t.bareNames(s, written)
}

// Paths rewrites only the path-like tokens of s, never bare names: for error
// texts and structured values, where a lone file name is data, not prose.
func (t *Translator) Paths(s string) string {
	s, _ = t.paths(s)
	return s
}

// paths rewrites the path-like tokens of s and returns the spans of the
// result that hold rewritten paths. A trailing separator stays outside the
// translated path ("dir/" becomes "/mnt/user-data/dir/").
func (t *Translator) paths(s string) (string, [][2]int) {
	if s == "" {
		return s, nil
	}
	var b strings.Builder
	var written [][2]int // spans of b holding rewritten paths
	last := 0
	for _, m := range pathToken.FindAllStringIndex(s, -1) {
		tok := s[m[0]:m[1]]
		core := strings.TrimRight(tok, trailing)
		if c := strings.TrimRight(core, "/"); c != "" && c != "file:" {
			core = c
		}
		if core == "" {
			continue
		}
		v, ok := t.memo[core]
		if !ok {
			v, _ = t.Ref(core)
			if t.memo == nil {
				t.memo = map[string]string{}
			}
			t.memo[core] = v
		}
		if v == "" {
			continue
		}
		b.WriteString(s[last:m[0]])
		written = append(written, [2]int{b.Len(), b.Len() + len(v)})
		b.WriteString(v)
		t.markNamed(v)
		last = m[0] + len(core)
	}
	if last > 0 {
		b.WriteString(s[last:])
		s = b.String()
	}
	return s, written
}

// bareNames replaces whole-word occurrences of changed files' names in one
// pass, trying the longest name first at each position, so a replacement is
// never rewritten again; never inside a longer path or word, nor as a
// directory segment, nor inside the sorted spans skip.
func (t *Translator) bareNames(s string, skip [][2]int) string {
	if len(t.names) == 0 {
		return s
	}
	byFirst := map[byte][]string{}
	for n := range t.names {
		byFirst[n[0]] = append(byFirst[n[0]], n)
	}
	for _, ns := range byFirst {
		sort.Slice(ns, func(i, j int) bool {
			if len(ns[i]) != len(ns[j]) {
				return len(ns[i]) > len(ns[j])
			}
			return ns[i] < ns[j]
		})
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if len(skip) > 0 && i >= skip[0][0] {
			i = max(i, skip[0][1])
			skip = skip[1:]
			continue
		}
		match := ""
		for _, n := range byFirst[s[i]] {
			if strings.HasPrefix(s[i:], n) && !precededByPath(s[:i]) && !followsName(s[i+len(n):]) {
				match = n
				break
			}
		}
		if match == "" {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(t.names[match])
		t.markNamed(t.names[match])
		i += len(match)
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// bareName reports whether a changed file's name may be rewritten where it
// appears alone in text: it must look like a file name, a stem and an
// extension of letters, digits, '_' or '-' holding a letter ("report.md",
// "my report (1).md"), with no line break or control character and no
// leading dot. "slept 3000ms", "Makefile", ".env" or "1.5" are ordinary
// words too often, and are rewritten only where written as paths.
func bareName(name string) bool {
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 || dot == len(name)-1 || name[0] == '.' || strings.TrimSpace(name[:dot]) != name[:dot] {
		return false
	}
	letter := false
	for _, r := range name[dot+1:] {
		if !isWord(r) && r != '-' {
			return false
		}
		letter = letter || unicode.IsLetter(r)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return letter
}

// isWord is Python's \w: a letter, a number or an underscore.
func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// precededByPath reports text ending in a word character, '.', '-' or a
// separator.
func precededByPath(before string) bool {
	r, n := utf8.DecodeLastRuneInString(before)
	if n == 0 {
		return false
	}
	return isWord(r) || r == '.' || r == '/' || r == '\\' || r == '-'
}

// followsName reports text that continues a name: a word character, a
// separator, a dash, or a dot followed by a word character (a final sentence
// period is allowed).
func followsName(after string) bool {
	r, n := utf8.DecodeRuneInString(after)
	if n == 0 {
		return false
	}
	if isWord(r) || r == '/' || r == '\\' || r == '-' {
		return true
	}
	if r != '.' {
		return false
	}
	next, m := utf8.DecodeRuneInString(after[n:])
	return m > 0 && isWord(next)
}

// RewriteResult translates a CallToolResult: text items, resource_link URIs,
// embedded resources' URIs and text, and every string in structuredContent
// (paths only, no bare names); an isError result's text is translated like
// any other. Changed files are listed in _meta. Items it does not change
// keep their bytes.
func RewriteResult(raw json.RawMessage, t *Translator, changed []string) json.RawMessage {
	// Bare names come only from changed files: a result with neither those
	// nor a possible path has nothing to translate and is not decoded.
	if len(changed) == 0 && !maySpellPath(raw) {
		return raw
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil || res == nil {
		return raw
	}
	touched := false
	var content []json.RawMessage
	// Only content (paths and bare names) and structuredContent (paths) are
	// translated; the same test spares decoding them (a _meta key such as
	// io.modelcontextprotocol/serverInfo holds a '/' of its own).
	if (len(changed) > 0 || maySpellPath(res["content"])) && json.Unmarshal(res["content"], &content) == nil {
		for i, item := range content {
			if out, ok := rewriteItem(item, t); ok {
				content[i] = out
				touched = true
			}
		}
		if touched {
			res["content"], _ = json.Marshal(content)
		}
	}
	if sc, ok := res["structuredContent"]; ok && maySpellPath(sc) {
		if v, err := decodeExact(sc); err == nil {
			if out, changed := rewriteValue(v, t); changed {
				if b, err := json.Marshal(out); err == nil {
					res["structuredContent"], touched = b, true
				}
			}
		}
	}
	var virtual []string
	for _, p := range changed {
		if v, ok := t.Ref(p); ok && (!t.onlyNamed || t.named[v]) {
			virtual = append(virtual, v)
		}
	}
	if len(virtual) > 0 {
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(res["_meta"], &meta)
		if meta == nil { // "_meta": null
			meta = map[string]json.RawMessage{}
		}
		meta[MetaChangedFiles], _ = json.Marshal(virtual)
		res["_meta"], _ = json.Marshal(meta)
		touched = true
	}
	if !touched {
		return raw
	}
	out, err := json.Marshal(res)
	if err != nil {
		return raw
	}
	return out
}

// maySpellPath reports whether JSON text could hold a path token: every one
// has a '/', spelled '/', "\/" or as a "\u" escape.
func maySpellPath(raw []byte) bool { return bytes.ContainsAny(raw, `/\`) }

// decodeExact decodes one JSON value keeping numbers as json.Number, so
// fields it does not rewrite keep their exact values.
func decodeExact(raw json.RawMessage) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	err := d.Decode(&v)
	return v, err
}

// rewriteValue translates the paths in every string of a decoded JSON value
// (object keys are left alone).
func rewriteValue(v any, t *Translator) (any, bool) {
	switch x := v.(type) {
	case string:
		r := t.Paths(x)
		return r, r != x
	case map[string]any:
		changed := false
		for k, e := range x {
			if r, ok := rewriteValue(e, t); ok {
				x[k], changed = r, true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, e := range x {
			if r, ok := rewriteValue(e, t); ok {
				x[i], changed = r, true
			}
		}
		return x, changed
	}
	return v, false
}

func rewriteItem(item json.RawMessage, t *Translator) (json.RawMessage, bool) {
	v, err := decodeExact(item)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, false
	}
	changed := false
	switch m["type"] {
	case "text":
		if s, ok := m["text"].(string); ok {
			if r := t.Text(s); r != s {
				m["text"], changed = r, true
			}
		}
	case "resource_link":
		if s, ok := m["uri"].(string); ok {
			if v, ok := t.Ref(s); ok {
				m["uri"], changed = v, true
				t.markNamed(v)
			}
		}
	case "resource":
		if r, ok := m["resource"].(map[string]any); ok {
			if s, ok := r["uri"].(string); ok {
				if v, ok := t.Ref(s); ok {
					r["uri"], changed = v, true
					t.markNamed(v)
				}
			}
			if s, ok := r["text"].(string); ok {
				if x := t.Text(s); x != s {
					r["text"], changed = x, true
				}
			}
		}
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return out, true
}
